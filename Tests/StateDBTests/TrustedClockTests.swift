import Foundation
import GRDB
import XCTest

@testable import StateDB

/// The trusted-time rule on a real catalog: the persisted anchor, the boot clock, and
/// a device clock that lies.
final class TrustedClockTests: XCTestCase {
    var dir: String!
    let server = Date(timeIntervalSince1970: 1_800_000_000)
    let day: TimeInterval = 86_400

    override func setUp() { dir = NSTemporaryDirectory() + "trusted-\(UUID().uuidString)" }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func readings(device: Date, boot seconds: Double, bootId: String = "boot-a") -> TrustedClock.Readings {
        TrustedClock.Readings(device: device, bootNanos: UInt64(seconds * 1e9), bootId: bootId)
    }

    func testBeforeAnyServerTimeTheDeviceClockIsUsed() throws {
        let catalog = try StateDB(stateDirectory: dir)
        let device = Date(timeIntervalSince1970: 1_700_000_000)
        let now = try catalog.pool.read { db in try TrustedClock.now(db: db, readings: self.readings(device: device, boot: 5)) }
        XCTAssertEqual(now, device)
    }

    func testADeviceClockSetBackCannotMoveItBack() throws {
        let catalog = try StateDB(stateDirectory: dir)
        _ = try catalog.pool.write { db in
            try TrustedClock.record(
                serverTime: self.server, bootNanos: UInt64(100e9), db: db,
                readings: self.readings(device: self.server, boot: 100))
        }
        // An hour of boot clock later, with the device clock wound back 30 days.
        let later = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server - 30 * self.day, boot: 3700))
        }
        XCTAssertEqual(later.timeIntervalSince(server), 3600, accuracy: 0.001)
        // A device clock set forward is not followed either: only the boot clock moves it.
        let forward = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server + 30 * self.day, boot: 3700))
        }
        XCTAssertEqual(forward.timeIntervalSince(server), 3600, accuracy: 0.001)
    }

    func testAnOlderServerTimeDoesNotMoveItBack() throws {
        let catalog = try StateDB(stateDirectory: dir)
        try catalog.pool.write { db in
            try TrustedClock.record(
                serverTime: self.server, bootNanos: UInt64(100e9), db: db,
                readings: self.readings(device: self.server, boot: 100))
            try TrustedClock.record(
                serverTime: self.server - self.day, bootNanos: UInt64(200e9), db: db,
                readings: self.readings(device: self.server, boot: 200))
        }
        let now = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server - self.day, boot: 200))
        }
        XCTAssertEqual(now.timeIntervalSince(server), 100, accuracy: 0.001, "kept the time handed out before")
    }

    func testAfterARebootTheLaterOfServerTimeAndDeviceClock() throws {
        let catalog = try StateDB(stateDirectory: dir)
        _ = try catalog.pool.write { db in
            try TrustedClock.record(
                serverTime: self.server, bootNanos: UInt64(100e9), db: db,
                readings: self.readings(device: self.server, boot: 100))
        }
        // New boot, boot clock restarted; the device clock set back 30 days: the persisted time stands.
        let back = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server - 30 * self.day, boot: 10, bootId: "boot-b"))
        }
        XCTAssertEqual(back, server)
        // New boot with the device clock ahead: the device clock (the boot gap is unknown otherwise).
        let ahead = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server + self.day, boot: 10, bootId: "boot-b"))
        }
        XCTAssertEqual(ahead, server + day)
        // Adopting the boot pins that time to this boot's clock: setting the device clock back
        // afterwards changes nothing, the boot clock moves it on.
        try catalog.pool.write { db in
            try TrustedClock.adoptBoot(db: db, readings: self.readings(device: self.server + self.day, boot: 10, bootId: "boot-b"))
        }
        let pinned = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server - 30 * self.day, boot: 70, bootId: "boot-b"))
        }
        XCTAssertEqual(pinned.timeIntervalSince(server + day), 60, accuracy: 0.001)
    }

    func testAFreshDeviceWithItsClockAheadDoesNotRaiseTheFloor() throws {
        let catalog = try StateDB(stateDirectory: dir)
        // Never saw a server time, the device clock 10 days ahead: the start adopts nothing.
        try catalog.pool.write { db in
            try TrustedClock.adoptBoot(db: db, readings: self.readings(device: self.server + 10 * self.day, boot: 5))
        }
        XCTAssertNil(try catalog.pool.read { db in try TrustedClock.load(db: db) })
        // The first server time is taken as it is.
        _ = try catalog.pool.write { db in
            try TrustedClock.record(
                serverTime: self.server, bootNanos: UInt64(10e9), db: db,
                readings: self.readings(device: self.server + 10 * self.day, boot: 10))
        }
        let now = try catalog.pool.read { db in
            try TrustedClock.now(db: db, readings: self.readings(device: self.server + 10 * self.day, boot: 70))
        }
        XCTAssertEqual(now.timeIntervalSince(server), 60, accuracy: 0.001)
    }

    func testSurvivesReopeningTheCatalog() throws {
        do {
            let catalog = try StateDB(stateDirectory: dir)
            _ = try catalog.pool.write { db in
                try TrustedClock.record(
                    serverTime: self.server, bootNanos: UInt64(100e9), db: db,
                    readings: self.readings(device: self.server, boot: 100))
            }
        }
        let catalog = try StateDB(stateDirectory: dir)
        let anchor = try XCTUnwrap(try catalog.pool.read { db in try TrustedClock.load(db: db) })
        XCTAssertEqual(anchor.serverTime, server)
        XCTAssertEqual(anchor.bootNanos, UInt64(100e9))
        XCTAssertEqual(anchor.bootId, "boot-a")
    }

    func testTheRealBootIdIsReadable() {
        XCTAssertFalse(TrustedClock.bootId.isEmpty)
        XCTAssertGreaterThan(TrustedClock.bootClockNanos(), 0)
    }
}
