import ArgumentParser
import Foundation
import Wire

/// Reads a connection's events until `handle` says the work is done, the connection closes, or
/// `timeout` passes; `handle` also hears a tick every `tick` seconds (to redraw a bar, or to
/// look for why nothing moves). Commands subscribe *before* they start the work, so no event is
/// missed. Several waits may follow one another on one connection.
enum EventWait {
    enum Outcome { case done, closed, timedOut }

    enum Step: Sendable {
        case event(RPCEvent)
        case tick(UInt64)
        case deadline(UInt64)
    }

    enum Input { case event(RPCEvent), tick }

    static func run(
        _ connection: Connection, timeout: Double?, tick: Double? = nil,
        handle: (Input) async -> Bool
    ) async -> Outcome {
        let id = UInt64.random(in: 1...UInt64.max)
        let sink = connection.stepSink
        let timer = Task {
            guard let timeout else { return }
            try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            sink.yield(.deadline(id))
        }
        let ticker = Task {
            guard let tick else { return }
            while !Task.isCancelled {
                try await Task.sleep(nanoseconds: UInt64(tick * 1e9))
                sink.yield(.tick(id))
            }
        }
        defer {
            timer.cancel()
            ticker.cancel()
        }
        for await step in connection.steps {
            switch step {
            case .event(let event):
                if await handle(.event(event)) { return .done }
            case .tick(let owner) where owner == id:
                if await handle(.tick) { return .done }
            case .deadline(let owner) where owner == id:
                return .timedOut
            default:
                continue
            }
        }
        return .closed
    }

    /// The failure for an outcome other than `.done`.
    static func failure(_ outcome: Outcome, service: ServiceName, what: String) -> CtlFailure? {
        switch outcome {
        case .done:
            return nil
        case .timedOut:
            return CtlFailure(
                name: "WaitTimeout", message: "gave up waiting for \(what) (--wait-timeout); the \(service.rawValue) carries on with it.",
                exit: ExitStatus.waitTimedOut, service: service)
        case .closed:
            return CtlFailure(
                name: "ConnectionClosed",
                message:
                    "the \(service.rawValue) closed the connection while \(what) was under way (stopped or restarted?); it resumes the work when it runs again.",
                exit: ExitStatus.unavailable, service: service)
        }
    }

    /// Reports an outcome other than `.done` and gives the exit to throw.
    static func fail(_ outcome: Outcome, service: ServiceName, what: String, json: Bool) -> ExitCode {
        failure(outcome, service: service, what: what)?.report(json: json) ?? .success
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
