import Foundation
import NIOHTTP1
import Synchronization
import Wire

/// Everything a request may touch: the catalog, the clock, the fault queues and the stores.
/// One instance serves all connections; its mutable parts are actors or lock-guarded.
final class Origin: Sendable {
    let index: CatalogIndex
    let dataDirectory: URL
    let clock = ServerClock()
    let faults = FaultInjector()
    let stats = RequestStats()
    let plays: PlayLogStore
    let consumption: PlayLogStore
    /// TIDAL Streaming Metrics and Progress events (`POST /v1/metrics`).
    let metrics: PlayLogStore
    let licenses: LicenseStore
    /// Products redelivered through `/_control/redeliver`: product id → the track whose file now
    /// carries it. The product keeps its id and metadata, but its manifest (and so its
    /// `manifestHash`) changes, as when a label redelivers a master (TIDAL re-validation).
    let redeliveries = Mutex<[String: String]>([:])
    /// The content catalog (`/v1/catalog/…`), changed through `/_control/catalog/items`.
    let contentFeed: Mutex<ContentFeed>
    /// Where each streaming station's next `play` answer starts in its lineup.
    let stationCursors = Mutex<[String: Int]>([:])
    /// Who holds the streaming privilege.
    let streaming: StreamingSessions
    /// `token:secret` as the client must send it in `Authorization: Basic …`.
    let expectedCredentials: String

    /// Opens the stores in `dataDirectory`; throws when they cannot be created.
    init(
        dataDirectory: URL, catalog: StateDB, token: String, secret: String,
        heartbeatSeconds: Int = OriginLimits.defaultHeartbeatSeconds
    ) throws {
        index = CatalogIndex(catalog)
        contentFeed = Mutex(ContentFeed.demo(index))
        streaming = StreamingSessions(heartbeatSeconds: heartbeatSeconds)
        self.dataDirectory = dataDirectory
        plays = try PlayLogStore(directory: dataDirectory, fileName: "plays.jsonl", idKey: "eventId", listKey: "events")
        consumption = try PlayLogStore(
            directory: dataDirectory, fileName: "consumption.jsonl",
            idKey: "recordId", listKey: "records")
        metrics = try PlayLogStore(
            directory: dataDirectory, fileName: "metrics.jsonl", idKey: "eventId", listKey: "events",
            requiredKeys: ["name"])
        licenses = LicenseStore(directory: dataDirectory)
        expectedCredentials = "\(token):\(secret)"
    }

    var serverTime: String {
        ServerClock.rfc3339(clock.now())
    }

    /// The error shape of docs/origin.md ("Errors"): `{"status","subStatus","userMessage"}`, plus
    /// `serverTime` so that `/v1/` errors also move the client's notion of server time.
    func error(_ status: HTTPResponseStatus, subStatus: Int, _ message: String, path: String) -> OriginResponse {
        OriginResponse.json(
            status,
            [
                "status": .int(Int(status.code)), "subStatus": .int(subStatus),
                "userMessage": .string(message), "serverTime": .string(serverTime),
            ])
    }

    /// A 200 JSON answer with `serverTime` added.
    func ok(_ fields: [String: JSONValue]) -> OriginResponse {
        var body = fields
        body["serverTime"] = .string(serverTime)
        return OriginResponse.json(.ok, .object(body))
    }

    /// Whether the request carries the configured Basic credentials.
    func isAuthorized(_ request: OriginRequest) -> Bool {
        guard let header = request.headers.first(name: "authorization") else { return false }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces))
        else { return false }
        return String(decoding: data, as: UTF8.self) == expectedCredentials
    }

    /// Parses a JSON object body; an empty body counts as `{}` for endpoints whose fields
    /// are all optional. Returns the 400 answer on malformed input.
    func objectBody(_ request: OriginRequest, emptyAllowed: Bool) -> Result<[String: JSONValue], ResponseError> {
        if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return emptyAllowed
                ? .success([:])
                : .failure(ResponseError(error(.badRequest, subStatus: 4000, "A JSON body is required.", path: request.path)))
        }
        guard let json = try? JSONValue.parse(request.body) else {
            return .failure(ResponseError(error(.badRequest, subStatus: 4000, "The body is not valid JSON.", path: request.path)))
        }
        guard let object = json.objectValue else {
            return .failure(ResponseError(error(.badRequest, subStatus: 4000, "The body must be a JSON object.", path: request.path)))
        }
        return .success(object)
    }

    func badRequest(_ message: String, _ request: OriginRequest) -> OriginResponse {
        error(.badRequest, subStatus: 4000, message, path: request.path)
    }

    func notFound(_ what: String, _ request: OriginRequest) -> OriginResponse {
        error(.notFound, subStatus: 2001, "\(what) not found.", path: request.path)
    }

    /// Future instants on the server clock, as RFC 3339.
    func after(seconds: Int) -> String {
        ServerClock.rfc3339(clock.now().addingTimeInterval(Double(seconds)))
    }
}

/// A ready error answer carried through `Result`.
struct ResponseError: Error {
    let response: OriginResponse
    init(_ response: OriginResponse) { self.response = response }
}

/// Shorthands the handlers use to build bodies; parsing and serializing live in Wire
/// (`JSONValue+Bytes.swift`).
extension JSONValue {
    var isNull: Bool { self == .null }

    /// A string, or null when absent: for optional fields such as `expiresAt`.
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    static func int(_ n: Int) -> JSONValue { .number(Double(n)) }

    /// Reads a list of strings: absent or null is an empty list, anything but an array of
    /// strings is `nil` (the caller answers 400).
    static func strings(_ value: JSONValue?) -> [String]? {
        guard let value, !value.isNull else { return [] }
        guard let array = value.arrayValue else { return nil }
        let strings = array.compactMap(\.stringValue)
        return strings.count == array.count ? strings : nil
    }
}
