import ArgumentParser
import Foundation
import NIOCore
import Wire

/// `cassettectl call <service> <method> [json-params]`: any method, raw JSON out.
struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Call any method and print its JSON result.",
        discussion: "Exit status: 0 on a result, 1 when the service answered with an error (its message on stderr), 69 when the service cannot be reached, 64 on bad usage.")

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "downloader, player or reporter.")
    var service: ServiceName

    @Argument(help: "Method name, e.g. service.status.")
    var method: String

    @Argument(help: "Params as a JSON object, e.g. '{\"stationId\":\"st-9\"}'.")
    var params: String?

    func run() async throws {
        var value: JSONValue = .object([:])
        if let params {
            guard let parsed = try? JSONCoding.parse(Array(params.utf8)), case .object = parsed else {
                throw ValidationError("params must be a JSON object, e.g. '{\"key\":\"value\"}'.")
            }
            value = parsed
        }
        let result = try await CtlClient.call(connection, service, method, value)
        print(CtlOutput.pretty(result))
    }
}

/// One connection to one service for the life of a command, with the CLI's error and exit-code
/// conventions: every failure is printed once, here, and turned into an `ExitCode`.
struct Connection: Sendable {
    let service: ServiceName
    let client: RPCClient
    let timeout: Double
    /// With --json, errors the service answered are also printed on stdout as JSON.
    let json: Bool

    static func open(_ options: ConnectionOptions, _ service: ServiceName, json: Bool = false) async throws -> Connection {
        let path = options.socketPath(for: service)
        do {
            let client = try await RPCClient.connect(path: path)
            return Connection(service: service, client: client, timeout: options.timeout, json: json)
        } catch {
            CtlOutput.error("cannot reach the \(service.rawValue) at \(path): is it running? (\(error))")
            throw ExitCode(ExitStatus.unavailable)
        }
    }

    func call(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        do {
            return try await client.call(method, params, timeout: .milliseconds(Int64(timeout * 1000)))
        } catch let error as RPCError {
            report(error, method: method)
            throw ExitCode(ExitStatus.serviceError)
        } catch {
            CtlOutput.error("\(service.rawValue): \(method): \(error)")
            throw ExitCode(ExitStatus.unavailable)
        }
    }

    /// Subscribes this connection to `topics` (all when empty).
    func subscribe(_ topics: [String]) async throws {
        _ = try await call("events.subscribe", ["topics": .array(topics.map { .string($0) })])
    }

    func close() async { await client.close() }

    private func report(_ error: RPCError, method: String) {
        if json {
            print(CtlOutput.pretty(["error": ["service": .string(service.rawValue), "method": .string(method),
                                              "code": .number(Double(error.code)), "name": .string(error.name),
                                              "message": .string(error.message)]]))
        }
        CtlOutput.error("\(service.rawValue): \(error.name): \(error.message)")
        if error.name == "MethodNotFound" {
            CtlOutput.error("this \(service.rawValue) does not offer '\(method)' (an older or not yet complete service; see docs/protocol.md).")
        }
    }
}

/// Connect-call-close.
enum CtlClient {
    static func call(_ options: ConnectionOptions, _ service: ServiceName, _ method: String,
                     _ params: JSONValue = .object([:]), json: Bool = false) async throws -> JSONValue {
        let connection = try await Connection.open(options, service, json: json)
        defer { Task { await connection.close() } }
        return try await connection.call(method, params)
    }
}

enum CtlOutput {
    static func pretty(_ value: JSONValue) -> String {
        let encoder = JSONCoding.encoder()
        encoder.outputFormatting.insert(.prettyPrinted)
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "\(value)"
    }

    static func compact(_ value: JSONValue) -> String {
        String(decoding: JSONCoding.data(value), as: UTF8.self)
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data("cassettectl: \(text)\n".utf8))
    }

    /// A result for people (`render`) or for scripts (pretty JSON).
    static func show(_ value: JSONValue, json: Bool, render: (JSONValue) -> String) {
        if json { print(pretty(value)) } else { print(render(value)) }
    }
}
