import Foundation
import GRDB

/// The one SQLite database every service shares (`<state-dir>/catalog.sqlite`, WAL mode).
///
/// Opening runs the migrations under an exclusive `flock` on `catalog.lock`, so three
/// services started at once on a fresh state dir agree on one schema instead of racing
/// to create the same tables. GRDB's change observation does not see other processes:
/// what another service must learn travels as an event over its socket.
public final class StateDB: Sendable {
    public static let fileName = "catalog.sqlite"

    /// Readers run concurrently with the one writer (WAL). Private: every access goes through
    /// the async methods below, or the `…Blocking` ones on a dedicated thread (see
    /// docs/architecture.md, "Threads and blocking").
    let pool: DatabasePool
    public let path: String
    /// Migrations applied when this process opened the catalog: the schema it works with.
    public let schemaVersionAtOpen: Int
    /// Migrations a newer Cassette applied that this binary does not know (all additive, or
    /// the catalog would not have opened): a rollback left them behind.
    public let unknownMigrations: [String]

    /// - Parameters:
    ///   - busyTimeout: how long a writer waits for another process's write lock.
    public init(stateDirectory: String, busyTimeout: TimeInterval = 10) throws(StateDBError) {
        do {
            try PrivateDirectory.create(stateDirectory)
        } catch {
            throw StateDBError(.openFailed, "Cannot create state directory \(stateDirectory): \(error)")
        }
        let path = stateDirectory + "/" + Self.fileName
        self.path = path
        var config = Configuration()
        config.busyMode = .timeout(busyTimeout)
        config.foreignKeysEnabled = true
        config.label = "catalog"
        // GRDB's default (.userInitiated) makes libdispatch raise its worker threads' priority
        // (nice -2, setpriority(2)): the catalog's work is no more urgent than the rest of the
        // service, so its threads keep the ordinary nice value (docs/operations.md, "Thread
        // priorities").
        config.qos = .default
        config.prepareDatabase { db in
            // FULL: a transaction that returned is on disk, even across power loss; the play
            // log's "durable before we answer" promise rests on this.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            (pool, schemaVersionAtOpen, unknownMigrations) = try Self.withFileLock(stateDirectory + "/catalog.lock") {
                let pool = try DatabasePool(path: path, configuration: config)
                Self.closeToOthers(path)
                // A newer Cassette's migrations: additive ones (new tables and columns this
                // binary never touches) are carried along, so a release rolled back after an
                // update still starts; one the newer binary marked required means tables this
                // binary would misunderstand, and writing to them could corrupt what that
                // version relies on.
                let (unknown, required) = try pool.read { try Self.unknownMigrations($0) }
                if !required.isEmpty {
                    throw StateDBError(
                        .schemaTooNew,
                        "The catalog at \(path) was written by a newer Cassette (migrations \(required.joined(separator: ", ")) change what this version relies on); install that version or a newer one."
                    )
                }
                // GRDB sets the writer connection of a pool to synchronous=NORMAL when it turns
                // WAL on, after `prepareDatabase` ran: NORMAL syncs only at checkpoints, so a
                // commit could be lost to a power cut. FULL again, on the one connection that writes.
                try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                try Self.migrator.migrate(pool)
                let version = try pool.read { db in try Self.migrator.appliedMigrations(db).count }
                return (pool, version, unknown)
            }
        } catch let error as StateDBError {
            throw error
        } catch {
            throw StateDBError(.openFailed, "Cannot open catalog at \(path): \(error)")
        }
    }

    /// The schema version this binary applied or found (the count of applied migrations).
    /// Blocking, like every `…Blocking` access: for tools and tests, not for async code.
    public func schemaVersion() throws -> Int {
        try readBlocking { db in try Self.migrator.appliedMigrations(db).count }
    }

    /// Every migration this build knows, in order; a catalog it opened has applied all of them.
    public static var knownMigrations: [String] { migrator.migrations }

    /// Blocking: for tools and tests, not for async code.
    public func appliedMigrations() throws -> [String] {
        try readBlocking { db in try Self.migrator.appliedMigrations(db) }
    }

    /// The catalog holds licenses and their content keys: whatever the umask (the units set
    /// 0027), other users get no access to it; the services' user and group keep theirs.
    private static func closeToOthers(_ path: String) {
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard stat(file, &info) == 0, info.st_mode & 0o007 != 0 else { continue }
            chmod(file, info.st_mode & 0o770)
        }
    }

    private static func withFileLock<T>(_ lockPath: String, _ body: () throws -> T) throws -> T {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StateDBError(.openFailed, "Cannot open lock file \(lockPath): errno \(errno)")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw StateDBError(.openFailed, "Cannot lock \(lockPath): errno \(errno)") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// StateDB failures with stable names.
public struct StateDBError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case openFailed = "CatalogOpenFailed", schemaTooNew = "CatalogSchemaTooNew"
        /// The disk holding the catalog is full (SQLITE_FULL): nothing of the write was kept.
        case storageFull = "StorageFull"
    }
    public let code: Code
    public let message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code.rawValue): \(message)" }
}
