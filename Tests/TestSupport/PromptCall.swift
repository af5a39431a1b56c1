import Foundation
import Wire

/// How a call ended when a test gives it a bounded time.
public enum CallOutcome: Sendable, CustomStringConvertible {
    case result(JSONValue)
    case error(RPCError)
    /// The service closed the connection without answering (e.g. while it stopped).
    case closed
    /// No answer within the time given, or another client failure.
    case noAnswer(String)

    public var description: String {
        switch self {
        case .result(let value): "result \(value)"
        case .error(let error): "error \(error)"
        case .closed: "connection closed"
        case .noAnswer(let why): "no answer: \(why)"
        }
    }

    /// An answer docs/protocol.md allows a call that needs an unreachable origin: accepted, or
    /// `OriginUnreachable` (1010).
    public var isAcceptedOrOriginUnreachable: Bool {
        switch self {
        case .result: true
        case .error(let error): error.code == RPCErrorKind.originUnreachable.code && error.name == RPCErrorKind.originUnreachable.name
        case .closed, .noAnswer: false
        }
    }
}

extension RPCClient {
    /// Calls `method` and waits at most `seconds` for its answer.
    public func callWithin(_ seconds: Int64, _ method: String, _ params: JSONValue = .object([:])) async -> CallOutcome {
        do {
            return .result(try await call(method, params, timeout: .seconds(seconds)))
        } catch let error as RPCError {
            return .error(error)
        } catch let error as RPCClientError where error.code == .connectionClosed {
            return .closed
        } catch {
            return .noAnswer("\(error)")
        }
    }
}

extension ServiceProcess {
    /// Starts `method`, sends SIGTERM while it waits, and returns the exit status (nil: still
    /// running after `seconds`) and how the call ended.
    public func sigtermDuring(_ method: String, _ params: JSONValue, within seconds: Double = 10)
        async throws -> (exitStatus: Int32?, call: CallOutcome)
    {
        let client = try await client()
        let waiting = Task { await client.callWithin(20, method, params) }
        try await Task.sleep(nanoseconds: 300_000_000)
        signal(SIGTERM)
        let status = try? waitExit(timeout: seconds)
        return (status, await waiting.value)
    }
}
