import ArgumentParser
import Foundation
import NIOCore
import Wire

/// One connection to one service for the life of a command, with the CLI's error and exit-code
/// conventions: every failure is printed once, here, and turned into an `ExitCode`.
struct Connection: Sendable {
    let service: ServiceName
    let client: RPCClient
    let timeout: Double
    /// With --json, failures are also printed on stdout as JSON.
    let json: Bool
    /// The connection's events and the ticks of whoever waits on them, in one stream: its only
    /// reader of `client.events` (an AsyncStream has one consumer).
    let steps: AsyncStream<EventWait.Step>
    let stepSink: AsyncStream<EventWait.Step>.Continuation

    /// Connects, or throws the failure in words (see `ConnectFailure`).
    static func connect(_ options: ConnectionOptions, _ service: ServiceName, json: Bool = false) async throws -> Connection {
        let path = options.socketPath(for: service)
        let client: RPCClient
        do {
            client = try await RPCClient.connect(path: path)
        } catch {
            throw ConnectFailure.diagnose(path: path, service: service, underlying: error)
        }
        let (steps, sink) = AsyncStream.makeStream(of: EventWait.Step.self)
        Task {
            for await event in client.events { sink.yield(.event(event)) }
            sink.finish()
        }
        return Connection(service: service, client: client, timeout: options.timeout, json: json, steps: steps, stepSink: sink)
    }

    /// Connects, or prints why not and exits 69.
    static func open(_ options: ConnectionOptions, _ service: ServiceName, json: Bool = false) async throws -> Connection {
        do {
            return try await connect(options, service, json: json)
        } catch let failure as CtlFailure {
            throw failure.report(json: json)
        }
    }

    /// Calls `method`; a failure is printed and thrown as the exit code.
    func call(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        do {
            return try await attempt(method, params)
        } catch let failure as CtlFailure {
            throw failure.report(json: json)
        }
    }

    /// Calls `method`; a failure is thrown as a `CtlFailure` for the caller to report.
    func attempt(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        do {
            return try await client.call(method, params, timeout: .milliseconds(Int64(timeout * 1000)))
        } catch let error as RPCError {
            throw CtlFailure.answered(error, service: service, method: method, params: params)
        } catch let error as RPCClientError where error.code == .timeout {
            throw CtlFailure(
                name: "Timeout", message: "the \(service.rawValue) did not answer \(method) within \(Self.seconds(timeout)) (--timeout)",
                exit: ExitStatus.unavailable, service: service, method: method)
        } catch let error as RPCClientError where error.code == .connectionClosed {
            throw CtlFailure(
                name: "ConnectionClosed", message: "the \(service.rawValue) closed the connection before answering \(method) (stopped or restarted?)",
                exit: ExitStatus.unavailable, service: service, method: method)
        } catch {
            throw CtlFailure(
                name: "Unreachable", message: "\(service.rawValue): \(method): \(error)",
                exit: ExitStatus.unavailable, service: service, method: method)
        }
    }

    /// Subscribes this connection to `topics` (all when empty).
    func subscribe(_ topics: [String]) async throws {
        _ = try await call("events.subscribe", ["topics": .array(topics.map { .string($0) })])
    }

    func close() async { await client.close() }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// Connect-call-close.
enum CtlClient {
    static func call(
        _ options: ConnectionOptions, _ service: ServiceName, _ method: String,
        _ params: JSONValue = .object([:]), json: Bool = false
    ) async throws -> JSONValue {
        let connection = try await Connection.open(options, service, json: json)
        defer { Task { await connection.close() } }
        return try await connection.call(method, params)
    }
}
