import Foundation
import OriginClient
import Wire

/// One delivery attempt as `playlog.status` shows it, and as `playlogAttempts` keeps it.
struct DeliveryAttempt: Sendable, Equatable {
    enum Result: String, Sendable { case delivered, failed }

    var startedAt: Date
    var endedAt: Date
    var records: Int
    var accepted: Int
    var rejected: Int
    var result: Result
    /// `{name, message, status?}` when the attempt failed.
    var error: JSONValue?

    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "startedAt": .string(UTCTimestamp.rfc3339(startedAt)), "endedAt": .string(UTCTimestamp.rfc3339(endedAt)),
            "records": .int(records), "accepted": .int(accepted), "rejected": .int(rejected),
            "result": .string(result.rawValue),
        ]
        if let error { fields["error"] = error }
        return .object(fields)
    }
}
