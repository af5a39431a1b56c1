import Foundation
import GRDB
import Wire

/// The time every expiry decision is judged at. A device clock can be set back to stretch a
/// rental, so the time used is the last server time seen carried forward on the boot clock
/// (CLOCK_BOOTTIME keeps counting through suspend and cannot be set), persisted in the catalog so
/// the player and a restarted downloader agree, and it never goes backwards.
///
/// The rule, in order:
/// 1. An anchor from this boot (same `/proc/sys/kernel/random/boot_id`): anchor server time plus
///    the boot-clock nanoseconds elapsed since it was taken.
/// 2. An anchor from an earlier boot (the boot clock restarted, so elapsed time is unknown):
///    max(anchor server time, device clock).
/// 3. No server time ever seen: the device clock.
/// In every case the answer is never earlier than `floor`, the newest trusted time persisted, so
/// neither a clock set back nor a server answering with an older time moves it backwards.
public enum TrustedClock {
    /// The settings key the anchor is persisted under.
    public static let settingsKey = "trustedTime"

    /// What is persisted: one server time as received, and the highest trusted time handed out.
    public struct Anchor: Codable, Sendable, Equatable {
        public var serverTime: Date
        /// CLOCK_BOOTTIME nanoseconds when `serverTime` arrived.
        public var bootNanos: UInt64
        /// The kernel's id of the boot `bootNanos` belongs to.
        public var bootId: String
        /// The newest trusted time persisted; nothing is ever answered earlier than this.
        public var floor: Date

        public init(serverTime: Date, bootNanos: UInt64, bootId: String, floor: Date) {
            self.serverTime = serverTime
            self.bootNanos = bootNanos
            self.bootId = bootId
            self.floor = floor
        }
    }

    /// The readings `now` is computed from; tests pass their own.
    public struct Readings: Sendable {
        public var device: Date
        public var bootNanos: UInt64
        public var bootId: String

        public init(device: Date, bootNanos: UInt64, bootId: String) {
            self.device = device
            self.bootNanos = bootNanos
            self.bootId = bootId
        }

        /// The machine's clocks right now.
        public static func current() -> Readings {
            Readings(device: Date(), bootNanos: bootClockNanos(), bootId: TrustedClock.bootId)
        }
    }

    /// The trusted time for `anchor` given `readings` (the rule above; pure).
    public static func now(anchor: Anchor?, readings: Readings) -> Date {
        guard let anchor else { return readings.device }
        let projected: Date
        if anchor.bootId == readings.bootId, readings.bootNanos >= anchor.bootNanos {
            projected = anchor.serverTime.addingTimeInterval(Double(readings.bootNanos - anchor.bootNanos) / 1e9)
        } else {
            projected = max(anchor.serverTime, readings.device)
        }
        return max(projected, anchor.floor)
    }

    /// The trusted time now, read from the catalog.
    public static func now(db: Database, readings: Readings = .current()) throws -> Date {
        now(anchor: try load(db: db), readings: readings)
    }

    /// Records a server time as received. The anchor moves to it; the floor keeps the trusted
    /// time just before, so an older server time cannot move the answer back.
    @discardableResult
    public static func record(
        serverTime: Date, bootNanos: UInt64, db: Database,
        readings: Readings = .current()
    ) throws -> Date {
        let previous = try load(db: db)
        let before = previous.map { now(anchor: $0, readings: readings) } ?? .distantPast
        // A sample taken in this boot; an id other than ours cannot be (it was just received).
        let anchor = Anchor(
            serverTime: serverTime, bootNanos: bootNanos, bootId: readings.bootId,
            floor: max(before, previous?.floor ?? .distantPast))
        try save(anchor, db: db)
        return now(anchor: anchor, readings: readings)
    }

    /// Adopts the current trusted time as this boot's anchor when the persisted one belongs to an
    /// earlier boot (or none exists), so a device clock changed later in this boot is not followed:
    /// from here the time advances on the boot clock alone until a server time arrives.
    ///
    /// Without any server time seen yet nothing is persisted: the device clock is used as it is
    /// (rule 3), and a clock that runs ahead on a fresh device must not become the floor, or the
    /// first real server time could not bring the trusted time back and content would expire early.
    public static func adoptBoot(db: Database, readings: Readings = .current()) throws {
        guard let previous = try load(db: db) else { return }
        if previous.bootId == readings.bootId { return }
        let current = now(anchor: previous, readings: readings)
        try save(
            Anchor(serverTime: current, bootNanos: readings.bootNanos, bootId: readings.bootId, floor: current),
            db: db)
    }

    public static func load(db: Database) throws -> Anchor? {
        guard
            let text = try String.fetchOne(
                db, sql: "SELECT value FROM settings WHERE key = ?",
                arguments: [settingsKey])
        else { return nil }
        // An unreadable value is treated as absent rather than stopping playback.
        return try? decoder.decode(Anchor.self, from: Data(text.utf8))
    }

    static func save(_ anchor: Anchor, db: Database) throws {
        let text = String(decoding: try encoder.encode(anchor), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO settings (key, value, updatedAt) VALUES (?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt
                """, arguments: [settingsKey, text, Date().databaseText])
    }

    /// CLOCK_BOOTTIME in nanoseconds.
    public static func bootClockNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// This boot's id; a fixed placeholder where the kernel does not expose one (a boot clock
    /// reading below the anchor's then still reveals a reboot).
    public static let bootId: String = {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "unknown" : trimmed
    }()

    private static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .millisecondsSince1970
        return e
    }

    private static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .millisecondsSince1970
        return d
    }
}
