import Foundation
import GRDB
import OriginClient
import StateDB
import Synchronization

/// The player's trusted time: what play events are stamped with (`startedAt`, `endedAt`,
/// actions' `at`) and what every validity in the player is judged at (a product's license or
/// offline window, in the engine and the local media server alike). Never the raw device clock,
/// since royalty reports are keyed on these times and a device clock can be days off. It is the
/// newest of the last server time this player's origin client saw and the catalog's trusted-time
/// anchor (which the downloader keeps), each carried forward on the boot clock (`TrustedClock`);
/// the device clock only when no server time was ever seen.
///
/// `now()` is synchronous (the engine stamps events inside its actor); the catalog's anchor is
/// read into memory by `refresh`, at start and with every progress save. `now(origin:db:)`
/// reads the anchor inside a catalog transaction, for answers read in that same transaction.
final class PlayClock: Sendable {
    private let origin: OriginClient?
    private let anchor = Mutex<TrustedClock.Anchor?>(nil)

    init(origin: OriginClient?) {
        self.origin = origin
    }

    func now(readings: TrustedClock.Readings = .current()) -> Date {
        Self.trusted(anchor: anchor.withLock { $0 }, sample: origin?.lastServerTime, readings: readings)
    }

    /// Reads the catalog's anchor again; a catalog that cannot be read keeps the one held.
    func refresh(from catalog: StateDB) async {
        guard let loaded = try? await catalog.read({ try TrustedClock.load(db: $0) }) else { return }
        anchor.withLock { $0 = loaded }
    }

    /// The trusted time now with the anchor as the catalog holds it (read in `db`'s transaction).
    static func now(origin: OriginClient?, db: Database, readings: TrustedClock.Readings = .current()) throws -> Date {
        trusted(anchor: try TrustedClock.load(db: db), sample: origin?.lastServerTime, readings: readings)
    }

    /// The rule: the newest of the anchor's and the sample's times carried forward to `readings`.
    static func trusted(anchor: TrustedClock.Anchor?, sample: ServerTimeSample?, readings: TrustedClock.Readings) -> Date {
        var candidates: [Date] = []
        if let anchor { candidates.append(TrustedClock.now(anchor: anchor, readings: readings)) }
        if let sample { candidates.append(sample.carriedForward(to: readings.bootNanos)) }
        return candidates.max() ?? readings.device
    }
}
