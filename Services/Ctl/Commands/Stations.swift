import ArgumentParser
import Wire

/// `cassettectl stations`: `stations.list` — what the origin offers and what the device holds.
struct Stations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the stations: offered by the origin and held on the device (stations.list).")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "stations.list", json: output.json)
        CtlOutput.show(result, json: output.json, render: Self.render)
    }

    /// One row per station: the origin's list joined with the device's offline copies by id.
    static func render(_ result: JSONValue) -> String {
        let remote = result["remoteOffline"]?.arrayValue ?? []
        let local = result["localOffline"]?.arrayValue ?? []
        let listed = result["stations"]?.arrayValue ?? []
        var order: [String] = []
        var rows: [String: (name: String, offline: JSONValue?, held: JSONValue?, listed: JSONValue?)] = [:]
        func note(_ id: String?, _ name: String?) -> String? {
            guard let id else { return nil }
            if rows[id] == nil {
                order.append(id)
                rows[id] = (name ?? "", nil, nil, nil)
            }
            if let name, rows[id]!.name.isEmpty { rows[id]!.name = name }
            return id
        }
        for s in listed { if let id = note(s["id"]?.stringValue, s["name"]?.stringValue) { rows[id]!.listed = s } }
        for s in remote { if let id = note(s["id"]?.stringValue, s["name"]?.stringValue) { rows[id]!.offline = s } }
        for s in local { if let id = note(s["id"]?.stringValue, s["name"]?.stringValue) { rows[id]!.held = s } }

        var table = Table(headers: ["ID", "NAME", "OFFLINE", "TRACKS", "LENGTH", "SIZE", "ON DEVICE", "EXPIRES"])
        for id in order {
            let row = rows[id]!
            let canOffline = row.offline != nil || row.held != nil || row.listed?["offline"]?.boolValue == true
            let held =
                row.held.map { h in
                    "\(Format.text(h["verifiedCount"]))/\(Format.text(h["itemCount"])) \(Format.bytes(h["sizeBytes"]?.doubleValue))"
                } ?? "-"
            table.add([
                id, row.name, canOffline ? "yes" : "stream only",
                Format.text(row.offline?["itemCount"] ?? row.held?["itemCount"]),
                Format.duration((row.offline ?? row.held)?["durationSeconds"]?.doubleValue),
                Format.bytes(row.offline?["sizeBytes"]?.doubleValue),
                held, Format.date(row.held?["expiresAt"]),
            ])
        }
        return (order.isEmpty ? "no stations" : table.render()) + "\n" + originLine(result)
    }

    /// Whether the origin's list is in the table, and when not, why: the error the downloader
    /// named (offline mode is not an outage, nor are refused credentials).
    static func originLine(_ result: JSONValue) -> String {
        if result["available"]?.boolValue == true { return "origin: reachable" }
        let why: String
        switch result["error"]?.stringValue {
        case nil, "OriginUnreachable": why = "not reachable"
        case "OfflineMode": why = "not asked (offline mode is on)"
        case "Unauthorized": why = "refuses the credentials (Unauthorized)"
        case "TLSFailed": why = "TLS failed (check originCAFile, originPinnedPublicKey and the clock)"
        case let name?: why = "unavailable (\(name))"
        }
        return "origin: \(why) — showing what the device holds"
    }
}
