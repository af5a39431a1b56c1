import Foundation
import Wire

/// A license granted by `POST /v1/licenses`.
struct License: Sendable {
    var id: String
    var productId: String
    var kind: String
    /// `nil` for a purchase; for a rental, the request time plus its length.
    var expiresAt: Date?
    var keyIds: [String]

    var json: JSONValue {
        [
            "licenseId": .string(id), "productId": .string(productId), "kind": .string(kind),
            "expiresAt": .optional(expiresAt.map(ServerClock.rfc3339)), "keyIds": .array(keyIds.map(JSONValue.string)),
        ]
    }
}

/// Licenses granted so far, appended to `DATA/licenses.jsonl` so that keys stay fetchable
/// after an origin restart (a downloader may fetch keys long after licensing).
actor LicenseStore {
    private let url: URL
    private var licenses: [String: License] = [:]

    init(directory: URL) {
        url = directory.appendingPathComponent("licenses.jsonl")
        guard let data = try? Data(contentsOf: url) else { return }
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let json = try? JSONValue.parse(Array(line)), let id = json["licenseId"]?.stringValue,
                let product = json["productId"]?.stringValue, let kind = json["kind"]?.stringValue
            else { continue }
            let expiry = json["expiresAtEpoch"]?.doubleValue.map { Date(timeIntervalSince1970: $0) }
            let keyIds = json["keyIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
            licenses[id] = License(id: id, productId: product, kind: kind, expiresAt: expiry, keyIds: keyIds)
        }
    }

    /// Records a new license; the rental clock starts now (the origin's shifted clock).
    func grant(productId: String, kind: String, rentalSeconds: Int, keyIds: [String], now: Date) throws -> License {
        let license = License(
            id: "lic-" + UUID().uuidString.lowercased(), productId: productId, kind: kind,
            expiresAt: kind == "rental" ? now.addingTimeInterval(Double(rentalSeconds)) : nil, keyIds: keyIds)
        var line = license.json
        if case .object(var fields) = line {
            fields["expiresAtEpoch"] = license.expiresAt.map { .number($0.timeIntervalSince1970) } ?? .null
            line = .object(fields)
        }
        let handle = try openForAppend()
        defer { try? handle.close() }
        try handle.write(contentsOf: line.serialized() + [UInt8(ascii: "\n")])
        try handle.synchronize()
        licenses[license.id] = license
        return license
    }

    func license(_ id: String) -> License? {
        licenses[id]
    }

    private func openForAppend() throws -> FileHandle {
        if !FileManager.default.fileExists(atPath: url.path) {
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        return handle
    }
}
