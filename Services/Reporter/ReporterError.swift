import Wire

/// The reporter's numbered errors (codes 3000–3999, docs/protocol.md), all of them in this one
/// table; `StorageFull` 1011 and the origin's errors are shared (`RPCErrorKind`). Names are
/// stable; match on them.
struct ReporterError: Error, Sendable, RPCErrorConvertible, CustomStringConvertible {
    enum Kind: String, Sendable, CaseIterable {
        /// The outbox holds `maxQueueBytes` of undelivered records: the caller keeps the record
        /// and records it again after a `QueueAvailable` event.
        case queueFull = "QueueFull"
        /// The record could not be written durably (an I/O error; a full disk is `StorageFull`); the caller keeps it.
        case notStored = "RecordNotStored"
        /// `playlog.flush` with no origin configured: records are kept until one is.
        case noOrigin = "OriginNotConfigured"

        var code: Int {
            switch self {
            case .queueFull: return 3001
            case .notStored: return 3002
            case .noOrigin: return 3003
            }
        }
    }

    let kind: Kind
    let message: String
    var details: [String: JSONValue] = [:]

    var description: String { "\(kind.rawValue): \(message)" }
    var rpcError: RPCError { RPCError(code: kind.code, name: kind.rawValue, message: message, details: details) }

    static func queueFull(queuedBytes: Int, recordBytes: Int, maxQueueBytes: Int) -> ReporterError {
        ReporterError(
            kind: .queueFull,
            message: "The play log queue is full (\(queuedBytes) of \(maxQueueBytes) bytes waiting for the origin); "
                + "this \(recordBytes)-byte record was not stored. Keep it and record it again after a QueueAvailable event.",
            details: ["queuedBytes": .int(queuedBytes), "maxQueueBytes": .int(maxQueueBytes)])
    }
}

extension JSONValue {
    static func int(_ value: Int) -> JSONValue { .number(Double(value)) }
}
