import Catalog
import Foundation
import GRDB
import OriginClient

/// Carries every server time the origin clients saw into the catalog's trusted clock, so the
/// time expiry is judged at survives restarts and is shared with the player.
actor TrustedTimeRecorder {
    private let catalog: Catalog
    private let origins: [OriginClient]
    /// The samples already persisted, per client, so an unchanged one is not written again.
    private var recorded: [ServerTimeSample?]

    init(catalog: Catalog, origins: [OriginClient?]) {
        self.catalog = catalog
        self.origins = origins.compactMap { $0 }
        recorded = Array(repeating: nil, count: self.origins.count)
    }

    /// At start: an anchor left by an earlier boot is replaced by this boot's (see `TrustedClock`).
    func adoptBoot() async {
        try? await catalog.write { db in try TrustedClock.adoptBoot(db: db) }
    }

    /// Persists the newest sample of each client that was not yet persisted.
    func capture() async {
        for (index, origin) in origins.enumerated() {
            guard let sample = origin.lastServerTime, sample != recorded[index] else { continue }
            do {
                try await catalog.write { db in
                    try TrustedClock.record(serverTime: sample.serverTime, bootNanos: sample.bootNanos, db: db)
                }
                recorded[index] = sample
            } catch {
                // Kept in memory by the client; tried again at the next capture.
            }
        }
    }

    /// The trusted time, after persisting what the origin said since the last look.
    func now() async -> Date {
        await capture()
        return (try? await catalog.read { db in try TrustedClock.now(db: db) }) ?? Date()
    }
}
