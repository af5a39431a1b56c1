import Foundation
import GRDB
import OriginClient
import StateDB

/// "May this product be played from the device now, and until when": the catalog's
/// `OfflineAvailability.validity` judged at the player's trusted time (`PlayClock`). The one
/// rule the engine (which stops a product played from the device when it ends) and the local
/// media server (which refuses the product from then on and cuts its answers in flight) both
/// use, so that the two end a product at the same instant.
struct PlayableWindow: Sendable, Equatable {
    var validity: OfflineAvailability.Validity
    /// The trusted time it was judged at.
    var now: Date
    /// When it ends, as an instant of `ContinuousClock` (what timers sleep on); nil: no end.
    /// Whoever waits for it reads the window again now and then (the trusted time can jump).
    var endsAt: ContinuousClock.Instant?

    /// Nothing has ended: no end, or an end still to come.
    var holds: Bool { validity.holds(at: now) }

    /// Reads `productId`'s validity and the trusted time in `db`'s transaction.
    static func read(productId: String, origin: OriginClient?, db: Database) throws -> PlayableWindow {
        try read(productId: productId, db: db, now: PlayClock.now(origin: origin, db: db))
    }

    /// The same at a given trusted time (tests fix it).
    static func read(productId: String, db: Database, now: Date) throws -> PlayableWindow {
        judged(try OfflineAvailability.validity(productId: productId, db: db, now: now), at: now)
    }

    /// `validity` as the catalog holds it, judged at the trusted time `now`.
    static func judged(_ validity: OfflineAvailability.Validity, at now: Date) -> PlayableWindow {
        let instant = ContinuousClock.now
        let judged = validity.judged(at: now)
        return PlayableWindow(
            validity: judged, now: now,
            endsAt: judged.until.map { instant + .seconds(max(0, $0.timeIntervalSince(now))) })
    }
}
