/// Wakes the delivery loop: new records, `playlog.flush`, or the origin reachable again.
/// Rings that come while nobody waits are kept (as a set of reasons) for the next wait.
actor Doorbell {
    enum Reason: Sendable, Hashable {
        case newRecords
        case flush
        case reachable
        case closed
    }

    private var rung: Set<Reason> = []
    private var waiter: (id: Int, continuation: CheckedContinuation<Set<Reason>, Never>)?
    private var nextID = 0
    private var closed = false

    func ring(_ reason: Reason) {
        rung.insert(reason)
        if let waiter {
            self.waiter = nil
            let reasons = rung
            rung = []
            waiter.continuation.resume(returning: reasons)
        }
    }

    /// Closes for good (shutdown): every wait from now on returns `[.closed]` at once.
    func close() {
        closed = true
        ring(.closed)
    }

    /// Waits for a ring or until `seconds` pass (nil: no limit). Returns the reasons rung,
    /// empty when the time ran out. Cancellation ends the wait like `close()`.
    func wait(seconds: Double?) async -> Set<Reason> {
        if closed { return [.closed] }
        if !rung.isEmpty {
            defer { rung = [] }
            return rung
        }
        nextID += 1
        let id = nextID
        let timer = seconds.map { seconds in
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
                await self?.expire(id)
            }
        }
        let reasons = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter = (id, continuation)
            }
        } onCancel: {
            Task { await self.close() }
        }
        timer?.cancel()
        return reasons
    }

    private func expire(_ id: Int) {
        guard let waiter, waiter.id == id else { return }
        self.waiter = nil
        waiter.continuation.resume(returning: [])
    }
}
