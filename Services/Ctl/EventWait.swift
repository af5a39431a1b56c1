import ArgumentParser
import Foundation
import Wire

/// Reads a connection's events until `handle` says the work is done, the connection closes, or
/// `timeout` passes. Commands subscribe *before* they start the work, so no event is missed.
enum EventWait {
    enum Outcome { case done, closed, timedOut }

    static func run(_ connection: Connection, timeout: Double?, handle: (RPCEvent) -> Bool) async -> Outcome {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        // Closing the connection at the deadline ends the event stream; the loop below then
        // tells a timeout from a service that went away by the clock.
        let timer = Task { [client = connection.client] in
            guard let timeout else { return }
            try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            await client.close()
        }
        defer { timer.cancel() }
        for await event in connection.client.events {
            if handle(event) { return .done }
        }
        if let deadline, Date() >= deadline { return .timedOut }
        return .closed
    }

    /// The exit for an outcome other than `.done`, with its message.
    static func fail(_ outcome: Outcome, service: ServiceName, what: String) -> ExitCode {
        switch outcome {
        case .done:
            return .success
        case .timedOut:
            CtlOutput.error("gave up waiting for \(what) (--wait-timeout); the \(service.rawValue) carries on with it.")
            return ExitCode(ExitStatus.waitTimedOut)
        case .closed:
            CtlOutput.error("the \(service.rawValue) closed the connection while \(what) was under way (stopped or restarted?); it resumes the work when it runs again.")
            return ExitCode(ExitStatus.unavailable)
        }
    }
}

/// The options of commands that can wait for the work they start.
struct WaitOptions: ParsableArguments {
    @Option(help: "Stop waiting after this many seconds (exit 75); the work goes on. Default: no limit.")
    var waitTimeout: Double?

    @Flag(help: "Never draw a progress bar (there is none anyway when stderr is not a terminal).")
    var noProgress = false

    func validate() throws {
        if let waitTimeout, !(waitTimeout.isFinite && waitTimeout > 0) {
            throw ValidationError("--wait-timeout must be a number of seconds above 0.")
        }
    }
}
