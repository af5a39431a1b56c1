import GRDB

/// The only ways into the catalog.
///
/// From async code (actors, tasks, NIO futures bridged with `get()`): `read`, `write` and
/// `writeWithoutTransaction`. They suspend the caller while GRDB runs the statement on its
/// own queue, so a Swift cooperative thread is never held waiting for SQLite — with one
/// cooperative thread per core, a blocked one can stall the whole service.
///
/// From a dedicated thread (the downloader's `DurableCommitter`, the reporter's group
/// committer, start-up on `NIOThreadPool`): `readBlocking` and `writeBlocking`. Called
/// inside a Swift task they stop a debug build (an assertion), so the mistake shows in tests.
///
/// A disk too full to write surfaces as `StateDBError(.storageFull)`, whatever the path.
extension StateDB {
    public func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await Self.namingFullDisk { try await pool.read(value) }
    }

    public func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await Self.namingFullDisk { try await pool.write(updates) }
    }

    /// For statements that manage their own transactions (`db.inTransaction`), or pragmas.
    public func writeWithoutTransaction<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await Self.namingFullDisk { try await pool.writeWithoutTransaction(updates) }
    }

    /// Blocks the calling thread: dedicated threads only, never a Swift task.
    public func readBlocking<T>(_ value: (Database) throws -> T) throws -> T {
        Self.assertDedicatedThread()
        return try Self.namingFullDisk { try pool.read(value) }
    }

    /// Blocks the calling thread: dedicated threads only, never a Swift task.
    public func writeBlocking<T>(_ updates: (Database) throws -> T) throws -> T {
        Self.assertDedicatedThread()
        return try Self.namingFullDisk { try pool.write(updates) }
    }

    /// Blocks the calling thread: dedicated threads only, never a Swift task.
    public func writeWithoutTransactionBlocking<T>(_ updates: (Database) throws -> T) throws -> T {
        Self.assertDedicatedThread()
        return try Self.namingFullDisk { try pool.writeWithoutTransaction(updates) }
    }

    static func assertDedicatedThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(
            withUnsafeCurrentTask { $0 == nil },
            "blocking catalog access from a Swift task; use the async read/write", file: file, line: line)
    }

    private static func namingFullDisk<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw Self.named(error) }
    }

    private static func namingFullDisk<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw Self.named(error) }
    }

    /// SQLITE_FULL (13) becomes the one named error every service reports for a full disk.
    static func named(_ error: any Error) -> any Error {
        guard let db = error as? DatabaseError, db.resultCode == .SQLITE_FULL else { return error }
        return StateDBError(.storageFull, "The disk holding the catalog is full; nothing was written. Free space and try again.")
    }
}

extension StateDB {
    /// Runs `SELECT 1` on a reader connection, on GRDB's own queues, and reports whether it
    /// succeeded to `completion` on the thread that ran it. For the health check: it neither
    /// blocks nor needs a Swift task, so a stalled catalog never holds the caller.
    public func probe(_ completion: @escaping @Sendable (Bool) -> Void) {
        pool.asyncRead { result in
            completion((try? result.get()).flatMap { db in try? Int.fetchOne(db, sql: "SELECT 1") } != nil)
        }
    }
}
