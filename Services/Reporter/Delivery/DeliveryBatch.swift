import Wire

/// A stored record on its way to the origin.
struct PendingRecord: Sendable, Equatable {
    var id: String
    var kind: RecordKind
    var body: String
    /// Where the record sits in the outbox (its insertion order); 0 when not read from it.
    var rowid: Int64 = 0
    var sizeBytes: Int { body.utf8.count }
}

/// What the origin's answer said about each record sent.
struct BatchVerdict: Sendable, Equatable {
    struct Rejection: Sendable, Equatable {
        var id: String
        var reason: String
    }

    var accepted: [String] = []
    var rejected: [Rejection] = []
    /// Sent but named neither accepted nor rejected: they stay pending and go again.
    var unanswered: [String] = []
}

/// Building a delivery request and reading its answer: pure functions, so the rules
/// ("removed only when named accepted", "oldest first", "one kind per request") are unit-tested.
enum DeliveryBatch {
    /// Cuts a batch (oldest first) into one request per kind, keeping each kind's order and
    /// sending first the kind of the oldest record.
    static func requests(_ records: [PendingRecord]) -> [(kind: RecordKind, records: [PendingRecord])] {
        var order: [RecordKind] = []
        var groups: [RecordKind: [PendingRecord]] = [:]
        for record in records {
            if groups[record.kind] == nil { order.append(record.kind) }
            groups[record.kind, default: []].append(record)
        }
        return order.map { ($0, groups[$0] ?? []) }
    }

    /// `{"events":[…]}` or `{"records":[…]}`: the stored bodies, exactly as they were validated
    /// and written, joined as they are (no parse and re-serialise per delivery).
    static func body(kind: RecordKind, records: [PendingRecord]) -> [UInt8] {
        var bytes = Array("{\"\(kind.listKey)\":[".utf8)
        bytes.reserveCapacity(records.reduce(bytes.count + 2) { $0 + $1.sizeBytes + 1 })
        for (index, record) in records.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: record.body.utf8)
        }
        bytes.append(contentsOf: "]}".utf8)
        return bytes
    }

    /// Reads `{"accepted":[id…],"rejected":[{"eventId"|"recordId", "index"?, "reason"}]}`.
    /// Only ids that were sent count; a rejection without a usable id is matched by its
    /// `index` in the request. A record named both ways counts as accepted (it reached the
    /// rights holder; resending it could not change that).
    static func verdict(answer: JSONValue, kind: RecordKind, sent: [PendingRecord]) -> BatchVerdict {
        let sentIDs = Set(sent.map(\.id))
        var decided: Set<String> = []
        var verdict = BatchVerdict()
        for value in answer["accepted"]?.arrayValue ?? [] {
            if let id = value.stringValue, sentIDs.contains(id), decided.insert(id).inserted {
                verdict.accepted.append(id)
            }
        }
        for entry in answer["rejected"]?.arrayValue ?? [] {
            var id = entry[kind.idKey]?.stringValue
            if id.map({ !sentIDs.contains($0) }) ?? true, let index = entry["index"]?.intValue, sent.indices.contains(index) {
                id = sent[index].id
            }
            guard let id, sentIDs.contains(id), decided.insert(id).inserted else { continue }
            let reason = entry["reason"]?.stringValue ?? entry["userMessage"]?.stringValue ?? "rejected by the origin without a reason"
            verdict.rejected.append(.init(id: id, reason: reason))
        }
        verdict.unanswered = sent.map(\.id).filter { !decided.contains($0) }
        return verdict
    }
}
