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

extension DeliveryAttempt {
    /// The error of an attempt whose answer named none of the records sent.
    static let unusableAnswer: JSONValue = [
        "name": "BadOriginResponse",
        "message": "the origin's answer named none of the records sent as accepted or rejected; they stay pending",
    ]

    /// An attempt's error as `playlog.status` and `DeliveryFailed` show it: `{name, message}`,
    /// with the HTTP status, sub-status and transport error when the origin client knows them.
    static func describe(_ error: Error) -> JSONValue {
        if let origin = error as? OriginError {
            var fields: [String: JSONValue] = ["name": .string(origin.name), "message": .string(origin.message)]
            if let status = origin.status { fields["status"] = .int(status) }
            if let subStatus = origin.subStatus { fields["subStatus"] = .int(subStatus) }
            if let transport = origin.transportError { fields["transportError"] = .string(transport) }
            return .object(fields)
        }
        if let rpc = error as? RPCErrorConvertible {
            return ["name": .string(rpc.rpcError.name), "message": .string(rpc.rpcError.message)]
        }
        return ["name": "DeliveryError", "message": .string("\(error)")]
    }
}
