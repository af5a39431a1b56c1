/// Counts of the outbox, kept in memory beside the table so `playlog.status` and the cap
/// check never scan it. Loaded once at open; afterwards changed only by the code that
/// commits the matching rows, on the database's one writer queue, after the commit.
struct OutboxCounters: Sendable, Equatable {
    struct PerKind: Sendable, Equatable {
        var pending = 0
        var delivered = 0
        var rejected = 0
    }

    var byKind: [RecordKind: PerKind] = [:]
    /// Bytes of the pending records' bodies: what the cap `maxQueueBytes` limits.
    var pendingBytes = 0

    var pending: Int { byKind.values.reduce(0) { $0 + $1.pending } }
    var delivered: Int { byKind.values.reduce(0) { $0 + $1.delivered } }
    var rejected: Int { byKind.values.reduce(0) { $0 + $1.rejected } }

    subscript(kind: RecordKind) -> PerKind {
        get { byKind[kind] ?? PerKind() }
        set { byKind[kind] = newValue }
    }
}
