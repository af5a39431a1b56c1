import Foundation
import GRDB
import OriginClient
import StateDB

/// The catalog's trusted clock (`settings` key `trustedTime`, kept by `TrustedClock`): the server
/// times the downloader saw, and the time expiry is judged at, shared with the player.
struct TrustedClockStore: Sendable {
    let catalog: StateDB

    /// An anchor left by an earlier boot is replaced by this boot's (see `TrustedClock`).
    func adoptBoot() async throws {
        try await catalog.write { db in try TrustedClock.adoptBoot(db: db) }
    }

    /// Returns the trusted time after the sample (see `TrustedClock.record`).
    @discardableResult
    func record(_ sample: ServerTimeSample) async throws -> Date {
        try await catalog.write { db in
            try TrustedClock.record(serverTime: sample.serverTime, bootNanos: sample.bootNanos, db: db)
        }
    }

    func now() async throws -> Date {
        try await catalog.read { db in try TrustedClock.now(db: db) }
    }
}
