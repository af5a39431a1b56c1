/// Writes of play and metric events the catalog has not taken yet, oldest first, at most one per
/// event: only an event's latest state matters (progress saves coalesce, a close replaces them). Entries leave
/// once the catalog has them, or — for a closed event — once the reporter has it.
struct PlayBacklog: Sendable {
    enum Change: Sendable, Equatable {
        /// Write the event to `playerPlays`: `open` with its progress, or `ready` when closed.
        case save(ReportRecord, closing: Bool)
        /// The reporter has the closed event durably: only its catalog row, if any, is left to delete.
        case forget
    }

    struct Entry: Sendable, Equatable {
        var eventId: String
        var change: Change
        /// Bumped on every change, so a write that finished late does not remove a newer state.
        var version: Int
    }

    private(set) var entries: [Entry] = []
    private var lastVersion = 0

    var first: Entry? { entries.first }
    var isEmpty: Bool { entries.isEmpty }

    /// Play events (open or closed) that are durable nowhere yet.
    var plays: Int { count(.play, closedOnly: false) }
    /// Closed play events durable nowhere yet.
    var closedPlays: Int { count(.play, closedOnly: true) }
    /// Metric events durable nowhere yet.
    var metrics: Int { count(.metric, closedOnly: true) }

    private func count(_ kind: ReportRecord.Kind, closedOnly: Bool) -> Int {
        entries.lazy.filter { entry in
            guard case .save(let record, let closing) = entry.change else { return false }
            return record.kind == kind && (closing || !closedOnly)
        }.count
    }

    /// Closed events durable nowhere yet, oldest first: what may go straight to the reporter.
    var closedEvents: [ReportRecord] {
        entries.compactMap { entry in
            if case .save(let record, closing: true) = entry.change { return record }
            return nil
        }
    }

    mutating func add(_ write: PlayWrite) {
        lastVersion += 1
        let change = Change.save(write.record, closing: write.closing)
        guard let index = entries.firstIndex(where: { $0.eventId == write.record.eventId }) else {
            entries.append(Entry(eventId: write.record.eventId, change: change, version: lastVersion))
            return
        }
        switch entries[index].change {
        case .forget, .save(_, closing: true): return // an event is final once closed
        case .save(_, closing: false):
            entries[index].change = change
            entries[index].version = lastVersion
        }
    }

    /// The catalog took `entry`: it leaves unless it changed meanwhile.
    mutating func applied(_ entry: Entry) {
        entries.removeAll { $0.eventId == entry.eventId && $0.version == entry.version }
    }

    /// The reporter stored the closed event: what is left is deleting its catalog row.
    mutating func handedOver(_ eventId: String) {
        guard let index = entries.firstIndex(where: { $0.eventId == eventId }),
            case .save(_, closing: true) = entries[index].change
        else { return }
        lastVersion += 1
        entries[index].change = .forget
        entries[index].version = lastVersion
    }
}
