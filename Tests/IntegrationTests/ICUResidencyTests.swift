import Foundation
import TestSupport
import XCTest

/// The daemons write and read their timestamps by hand (`UTCTimestamp`, `Date.databaseText`)
/// instead of through Foundation's date formatters, which open ICU calendars and time zones and
/// leave 4–5 MiB of ICU's data resident in each daemon that formats a date once. After a sync,
/// a play and its delivery, no daemon has more of lib_FoundationICU resident than loading it
/// costs (its relocations: about 1 MiB).
final class ICUResidencyTests: XCTestCase {
    /// Loading alone stays under this; one ICU calendar or formatter goes well past it.
    static let loadingOnlyBytes = 2 << 20

    func testDaemonsLeaveICUsDataUntouched() async throws {
        let stack = try CassetteStack()
        defer { stack.stop() }
        let sync = try Command.ctl(stack, ["sync", "st-9"])
        XCTAssertEqual(sync.status, 0, sync.all + stack.logs)
        let tune = try Command.ctl(stack, ["tune", "st-9"])
        XCTAssertEqual(tune.status, 0, tune.all + stack.logs)
        try await waitUntil("the player to play st-9\n" + stack.logs) {
            try Command.ctl(stack, ["now", "--json"]).json?["playbackState"]?.stringValue == "PLAYING"
        }
        XCTAssertEqual(try Command.ctl(stack, ["stop"]).status, 0)
        try await waitUntil("the play to reach the origin\n" + stack.logs) {
            try await (stack.api.stats()).object("plays").int("unique") ?? 0 > 0
        }

        var seen: [String] = []
        for service in [stack.downloader!, stack.player!, stack.reporter!] {
            let resident = try Self.residentBytes(pid: service.pid, of: "lib_FoundationICU")
            seen.append("\(service.name) \(resident >> 10) KiB")
            XCTAssertGreaterThan(resident, 0, "\(service.name): lib_FoundationICU is not in its smaps")
            XCTAssertLessThan(
                resident, Self.loadingOnlyBytes,
                "\(service.name) has \(resident >> 10) KiB of ICU resident: something formats dates through ICU")
        }
        print("ICU resident after a sync, a play and its delivery: " + seen.joined(separator: ", "))
    }

    /// The resident bytes of the mappings of a file whose path contains `library`, from
    /// /proc/PID/smaps.
    static func residentBytes(pid: pid_t, of library: String) throws -> Int {
        var inLibrary = false, kilobytes = 0
        for line in try readProcFile("/proc/\(pid)/smaps").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                inLibrary = fields.count >= 6 && fields[5].contains(library)
            } else if inLibrary, fields.first == "Rss:", fields.count >= 2 {
                kilobytes += Int(fields[1]) ?? 0
            }
        }
        return kilobytes * 1024
    }
}
