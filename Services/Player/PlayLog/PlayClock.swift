import Catalog
import Foundation
import OriginClient
import Synchronization

/// The time play events are stamped with (`startedAt`, `endedAt`, actions' `at`): trusted
/// time, never the raw device clock, since royalty reports are keyed on these times and a
/// device clock can be days off. It is the newest of the last server time this player's
/// origin client saw and the catalog's trusted-time anchor (which the downloader keeps), each
/// carried forward on the boot clock (`TrustedClock`); the device clock only when no server
/// time was ever seen.
///
/// `now()` is synchronous (the engine stamps events inside its actor); the catalog's anchor is
/// read into memory by `refresh`, at start and with every progress save.
final class PlayClock: Sendable {
    private let origin: OriginClient?
    private let anchor = Mutex<TrustedClock.Anchor?>(nil)

    init(origin: OriginClient?) {
        self.origin = origin
    }

    func now(readings: TrustedClock.Readings = .current()) -> Date {
        var candidates: [Date] = []
        if let anchor = anchor.withLock({ $0 }) {
            candidates.append(TrustedClock.now(anchor: anchor, readings: readings))
        }
        if let sample = origin?.lastServerTime {
            candidates.append(sample.carriedForward(to: readings.bootNanos))
        }
        return candidates.max() ?? readings.device
    }

    /// Reads the catalog's anchor again; a catalog that cannot be read keeps the one held.
    func refresh(from catalog: Catalog) async {
        guard let loaded = try? await catalog.read({ try TrustedClock.load(db: $0) }) else { return }
        anchor.withLock { $0 = loaded }
    }
}
