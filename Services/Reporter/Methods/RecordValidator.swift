import Foundation
import OriginClient
import Wire

/// Checks a play event, a consumption record or a metric event against the origin's rules (docs/origin.md, docs/protocol.md) before it is stored, so a
/// record the origin would refuse is refused now, while the caller still has it, with a
/// message naming the field. Members beyond the contract's are passed through untouched.
enum RecordValidator {
    /// A validation failure: -32602 with the field's path in the message and in `data.field`.
    static func invalid(_ field: String, _ message: String) -> RPCError {
        RPCError(code: -32602, name: "InvalidParams", message: "\(field) \(message)", details: ["field": .string(field)])
    }

    /// The object under `params.event`, which both record methods take.
    private static func eventObject(_ params: JSONValue, method: String, example: String) throws(RPCError) -> [String: JSONValue] {
        guard let object = params.objectValue else {
            throw invalid("params", "of '\(method)' must be an object {\"event\": {...}}.")
        }
        guard let eventValue = object["event"], eventValue != .null else {
            throw invalid("params.event", "is required: '\(method)' takes {\"event\": \(example)}.")
        }
        guard let event = eventValue.objectValue else {
            throw invalid("params.event", "must be an object.")
        }
        return event
    }

    /// `playlog.record {"event": {...}}`.
    static func playEvent(params: JSONValue) throws(RPCError) -> OutboxRecord {
        var event = try eventObject(params, method: "playlog.record", example: "{\"eventId\": UUID, …}")
        let base = "params.event"
        let id = try uuid(event, "eventId", base)
        try token(event, "productId", base)
        try token(event, "requestedProductId", base)
        try text(event, "playbackSessionId", base)
        try time(event, "startedAt", base)
        try time(event, "endedAt", base)
        try position(event, "startPosition", base)
        try position(event, "endPosition", base)
        guard let offline = event["offline"], offline != .null else { throw missing(base, "offline", "true or false") }
        guard offline.boolValue != nil else { throw invalid("\(base).offline", "must be true or false.") }
        guard let actions = event["actions"], actions != .null else { throw missing(base, "actions", "an array (possibly empty)") }
        guard actions.arrayValue != nil else { throw invalid("\(base).actions", "must be an array.") }
        for key in ["stationId", "sourceType", "sourceId"] {
            if let value = event[key], value != .null, value.stringValue == nil {
                throw invalid("\(base).\(key)", "must be a string when present.")
            }
        }
        event["eventId"] = .string(id)
        return try sized(OutboxRecord(id: id, kind: .play, body: text(of: .object(event))), field: base, members: event)
    }

    /// `consumption.record {"recordId"?, "productId", "at", "start", "end"}`. The contract's
    /// params carry no id, so one is made when the caller sends none; a caller that wants
    /// "recorded twice, stored once" sends its own UUID `recordId`.
    static func consumption(params: JSONValue, makeID: () -> String = { UUID().uuidString.lowercased() }) throws(RPCError) -> OutboxRecord {
        guard var record = params.objectValue else {
            throw invalid("params", "of 'consumption.record' must be an object {\"productId\", \"at\", \"start\", \"end\"}.")
        }
        let base = "params"
        let id: String
        if let given = record["recordId"], given != .null {
            id = try uuid(record, "recordId", base)
        } else {
            id = makeID()
        }
        try token(record, "productId", base)
        try time(record, "at", base)
        try position(record, "start", base)
        try position(record, "end", base)
        record["recordId"] = .string(id)
        return try sized(
            OutboxRecord(
                id: id, kind: .consumption, body: text(of: .object(record)),
                consumedProductId: record["productId"]?.stringValue), field: base, members: record)
    }

    /// The event names `metrics.record` takes: TIDAL's Streaming Metrics and Progress events.
    static let metricNames: Set<String> = ["streaming_session_start", "streaming_session_end", "playback_statistics", "progress"]

    /// `metrics.record {"event": {"eventId", "name", "productId", "streamingSessionId", "at", "payload"}}`.
    static func metric(params: JSONValue) throws(RPCError) -> OutboxRecord {
        var event = try eventObject(params, method: "metrics.record", example: "{\"eventId\": UUID, \"name\", …}")
        let base = "params.event"
        let id = try uuid(event, "eventId", base)
        guard let name = event["name"], name != .null else {
            throw missing(base, "name", "one of \(metricNames.sorted().joined(separator: ", "))")
        }
        guard let named = name.stringValue, metricNames.contains(named) else {
            throw invalid("\(base).name", "must be one of \(metricNames.sorted().joined(separator: ", ")), got \(short(name)).")
        }
        try token(event, "productId", base)
        try text(event, "streamingSessionId", base)
        try time(event, "at", base)
        guard let payload = event["payload"], payload != .null else { throw missing(base, "payload", "an object") }
        guard payload.objectValue != nil else { throw invalid("\(base).payload", "must be an object.") }
        event["eventId"] = .string(id)
        return try sized(OutboxRecord(id: id, kind: .metric, body: text(of: .object(event))), field: base, members: event)
    }

    // MARK: Field checks

    private static func missing(_ base: String, _ key: String, _ what: String) -> RPCError {
        invalid("\(base).\(key)", "is required: \(what).")
    }

    private static func uuid(_ object: [String: JSONValue], _ key: String, _ base: String) throws(RPCError) -> String {
        guard let value = object[key], value != .null else {
            throw missing(base, key, "a UUID such as 6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b")
        }
        guard let text = value.stringValue, isUUID(text) else {
            throw invalid("\(base).\(key)", "must be a UUID (8-4-4-4-12 hexadecimal digits), got \(short(value)).")
        }
        return text
    }

    /// A product id as the origin hands them out (`[A-Za-z0-9._-]{1,128}`).
    private static func token(_ object: [String: JSONValue], _ key: String, _ base: String) throws(RPCError) {
        guard let value = object[key], value != .null else { throw missing(base, key, "a product id such as \"tr-7\"") }
        guard let text = value.stringValue, OriginID.isValid(text) else {
            throw invalid("\(base).\(key)", "must be a product id of 1–128 letters, digits, '.', '_' or '-' (not \".\" or \"..\"), got \(short(value)).")
        }
    }

    private static func text(_ object: [String: JSONValue], _ key: String, _ base: String) throws(RPCError) {
        guard let value = object[key], value != .null else { throw missing(base, key, "a non-empty string") }
        guard let text = value.stringValue, !text.isEmpty else {
            throw invalid("\(base).\(key)", "must be a non-empty string, got \(short(value)).")
        }
    }

    /// A time: an RFC 3339 string (what the origin itself writes) or Unix epoch milliseconds.
    private static func time(_ object: [String: JSONValue], _ key: String, _ base: String) throws(RPCError) {
        guard let value = object[key], value != .null else {
            throw missing(base, key, "an RFC 3339 time such as \"2026-01-31T12:00:00Z\"")
        }
        if let n = value.doubleValue, n >= 0, n.isFinite { return }
        guard let text = value.stringValue, isRFC3339(text) else {
            throw invalid("\(base).\(key)", "must be an RFC 3339 time such as \"2026-01-31T12:00:00Z\" (or epoch milliseconds), got \(short(value)).")
        }
    }

    /// A position in the media, in seconds.
    private static func position(_ object: [String: JSONValue], _ key: String, _ base: String) throws(RPCError) {
        guard let value = object[key], value != .null else { throw missing(base, key, "a position in seconds") }
        guard let n = value.doubleValue, n >= 0, n.isFinite else {
            throw invalid("\(base).\(key)", "must be a number of seconds, 0 or more, got \(short(value)).")
        }
    }

    private static func sized(_ record: OutboxRecord, field: String, members: [String: JSONValue]) throws(RPCError) -> OutboxRecord {
        guard record.sizeBytes > ReporterSettings.maxRecordBytes else { return record }
        let largest = members.max { text(of: $0.value).utf8.count < text(of: $1.value).utf8.count }
        var message = "is \(record.sizeBytes) bytes as JSON; a record may be at most \(ReporterSettings.maxRecordBytes) bytes (20 KiB)."
        if let largest {
            message += " Its largest member is \(field).\(largest.key) (\(text(of: largest.value).utf8.count) bytes)."
        }
        throw invalid(field, message)
    }

    // MARK: Syntax

    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard b == UInt8(ascii: "-") else { return false }
            } else {
                let hex = (b >= 48 && b <= 57) || (b >= 65 && b <= 70) || (b >= 97 && b <= 102)
                guard hex else { return false }
            }
        }
        return true
    }

    /// RFC 3339 date-time syntax (`2026-11-21T10:00:00Z`, `…00.123+01:00`), checked by hand:
    /// a date formatter per call would cost more than the rest of the validation together.
    static func isRFC3339(_ text: String) -> Bool {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var value = 0
            for i in at..<(at + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        func byte(_ at: Int, _ allowed: String) -> Bool { at < b.count && allowed.utf8.contains(b[at]) }
        guard let year = digits(0, 4), byte(4, "-"), let month = digits(5, 2), byte(7, "-"), let day = digits(8, 2),
            byte(10, "Tt "), let hour = digits(11, 2), byte(13, ":"), let minute = digits(14, 2), byte(16, ":"),
            let second = digits(17, 2)
        else { return false }
        guard year >= 1, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { return false }
        var i = 19
        if byte(i, ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            guard i > start else { return false }
        }
        if byte(i, "Zz") { return i + 1 == b.count }
        guard byte(i, "+-"), let offsetHour = digits(i + 1, 2), byte(i + 3, ":"), let offsetMinute = digits(i + 4, 2) else { return false }
        return offsetHour < 24 && offsetMinute < 60 && i + 6 == b.count
    }

    static func text(of value: JSONValue) -> String {
        String(decoding: value.serialized(), as: UTF8.self)
    }

    /// The offending value, shortened, for messages.
    private static func short(_ value: JSONValue) -> String {
        let t = text(of: value)
        return t.count > 60 ? String(t.prefix(57)) + "…" : t
    }
}
