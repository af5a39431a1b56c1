import ArgumentParser

/// The exit codes scripts can rely on (docs/operations.md, "cassettectl"). 0, 1, 64 and 69 are
/// the codes the first cassettectl had; 2 and 75 were added for commands that wait.
enum ExitStatus {
    /// The service answered with an error (`RPCError`): the request itself was refused.
    static let serviceError: Int32 = 1
    /// The work waited for finished, but not well: a sync with failed items, a failed offline.
    static let workFailed: Int32 = 2
    /// `cassettectl health`: the set is not fit to keep (a service down, stalled, or with a
    /// problem it reports); one line per problem says what.
    static let unhealthy: Int32 = 3
    /// EX_USAGE: argument-parser's own code for bad usage, listed here for the docs.
    static let usage: Int32 = 64
    /// EX_UNAVAILABLE: no socket, connection refused or lost, no answer within --timeout.
    static let unavailable: Int32 = 69
    /// EX_TEMPFAIL: --wait-timeout passed; the service carries on with the work.
    static let waitTimedOut: Int32 = 75

    static func exit(_ code: Int32) -> ExitCode { ExitCode(code) }
}
