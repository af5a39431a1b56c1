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
            guard let parsed = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(params.utf8)),
                  case .object = parsed else {
                throw ValidationError("params must be a JSON object, e.g. '{\"key\":\"value\"}'.")
            }
            value = parsed
        }
        let result = try await CtlClient.call(connection, service, method, value)
        print(CtlOutput.pretty(result))
    }
}

/// Connect-call-close with the CLI's exit-code conventions.
enum CtlClient {
    static func call(_ options: ConnectionOptions, _ service: ServiceName, _ method: String,
                     _ params: JSONValue) async throws -> JSONValue {
        let client = try await connect(options, service)
        defer { Task { await client.close() } }
        do {
            return try await client.call(method, params, timeout: .milliseconds(Int64(options.timeout * 1000)))
        } catch let error as RPCError {
            CtlOutput.error("\(service.rawValue): \(error.name): \(error.message)")
            throw ExitCode(1)
        } catch {
            CtlOutput.error("\(service.rawValue): \(error)")
            throw ExitCode(69)
        }
    }

    static func connect(_ options: ConnectionOptions, _ service: ServiceName) async throws -> RPCClient {
        let path = options.socketPath(for: service)
        do {
            return try await RPCClient.connect(path: path)
        } catch {
            CtlOutput.error("cannot reach the \(service.rawValue) at \(path): is it running? (\(error))")
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
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
}
