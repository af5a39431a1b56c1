import Foundation
import OriginClient
import StateDB

/// Carries every server time the origin clients saw into the catalog's trusted clock, so the
/// time expiry is judged at survives restarts and is shared with the player.
actor TrustedTimeRecorder {
    private let clock: TrustedClockStore
    private let origins: [OriginClient]
    /// The samples already persisted, per client, so an unchanged one is not written again.
    private var recorded: [ServerTimeSample?]

    init(catalog: StateDB, origins: [OriginClient?]) {
        self.clock = TrustedClockStore(catalog: catalog)
        self.origins = origins.compactMap { $0 }
        recorded = Array(repeating: nil, count: self.origins.count)
    }

    /// At start: an anchor left by an earlier boot is replaced by this boot's (see `TrustedClock`).
    func adoptBoot() async {
        try? await clock.adoptBoot()
    }

    /// Persists the newest sample of each client that was not yet persisted.
    func capture() async {
        for (index, origin) in origins.enumerated() {
            guard let sample = origin.lastServerTime, sample != recorded[index] else { continue }
            do {
                try await clock.record(sample)
                recorded[index] = sample
            } catch {
                // Kept in memory by the client; tried again at the next capture.
            }
        }
    }

    /// The trusted time, after persisting what the origin said since the last look.
    func now() async -> Date {
        await capture()
        return (try? await clock.now()) ?? Date()
    }
}
