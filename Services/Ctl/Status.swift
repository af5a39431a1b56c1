import ArgumentParser
import Wire

/// `cassettectl status [service…]`: one line per service for people, JSON for scripts.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show each service's status.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    @Argument(help: "Services to ask (default: all three).")
    var services: [ServiceName] = []

    func run() async throws {
        let wanted = services.isEmpty ? ServiceName.allCases : services
        var results: [String: JSONValue] = [:]
        var failed = false
        for service in wanted {
            do {
                results[service.rawValue] = try await CtlClient.call(connection, service, "service.status", [:])
            } catch {
                results[service.rawValue] = ["error": "unreachable"]
                failed = true
            }
        }
        if json {
            print(CtlOutput.pretty(.object(results)))
        } else {
            print("SERVICE     STATE     PID      UPTIME   VERSION  CATALOG")
            for service in wanted {
                let r = results[service.rawValue] ?? .null
                if r["error"] != nil {
                    print(pad(service.rawValue, 12) + "down")
                    continue
                }
                let uptime = r["uptimeSeconds"]?.doubleValue.map { String(format: "%.0fs", $0) } ?? "-"
                print(pad(service.rawValue, 12) + pad("up", 10) + pad(r["pid"]?.intValue.map(String.init) ?? "-", 9)
                      + pad(uptime, 9) + pad(r["version"]?.stringValue ?? "-", 9)
                      + "schema v\(r["catalog"]?["schemaVersion"]?.intValue.map(String.init) ?? "?")")
            }
        }
        if failed { throw ExitCode(69) }
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }
}

import Foundation
