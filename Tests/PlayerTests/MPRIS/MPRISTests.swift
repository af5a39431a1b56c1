import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB
@testable import player

/// MPRIS over D-Bus: a real player serving `org.mpris.MediaPlayer2.cassette` on a private
/// `dbus-daemon`, driven by the real `playerctl`, with the player's own state read over its socket.
final class MPRISTests: XCTestCase {
    /// A station tuned over the socket is seen and driven by playerctl: status, metadata,
    /// play-pause both ways, next (the station's next item), stop; and `playerctl --follow`
    /// hears each change as a PropertiesChanged signal.
    func testPlayerctlDrivesAStation() async throws {
        let h = try PlayerHarness()
        let bus = try PrivateBus(socket: h.dir.path + "/bus")
        let tracks = try (1...3).map { try h.makeTrack("tr-7-0\($0)", seconds: 30, frequency: 200 + 110 * $0) }
        try h.addStation("st-7", name: "Drive", items: tracks.enumerated().map { ("tr-7-0\($0.offset + 1)", $0.element, "verified") })
        try await h.catalog.pool.write { db in
            try db.execute(sql: "UPDATE mediaItems SET artist = 'Ensemble', album = 'Road Songs'")
        }
        _ = try await h.start(pace: "realtime", config: #"{"player":{"mprisBus":"\#(bus.address)"}}"#)
        try await waitServing(h)

        let follow = try bus.follow(["status"], into: h.dir.path + "/follow.txt")
        defer { bus.end(follow) }
        // --follow prints the status it finds first: it is listening from then on.
        try await waitUntil("playerctl --follow started") { try followed(h) == ["Stopped"] }

        _ = try await h.call("station.tune", ["stationId": "st-7"])
        try await waitUntil("Playing for playerctl") { try bus.cassette("status") == "Playing" }
        let metadata = try bus.cassette("metadata")
        print("playerctl -p cassette metadata:\n\(metadata)")
        let duration = try await h.status()["durationSeconds"]?.doubleValue ?? 0
        XCTAssertEqual(
            try bus.cassette("metadata", "--format", "{{mpris:trackid}}|{{xesam:title}}|{{xesam:artist}}|{{xesam:album}}|{{mpris:length}}"),
            "'/org/cassette/track/tr_2d7_2d01'|Title tr-7-01|Ensemble|Road Songs|\(Int64((duration * 1_000_000).rounded()))")
        XCTAssertGreaterThan(duration, 0)

        _ = try bus.cassette("play-pause")
        try await waitUntil("paused over the socket") { try await h.status()["playbackState"]?.stringValue == "NOT_PLAYING" }
        try await waitUntil("Paused for playerctl") { try bus.cassette("status") == "Paused" }
        _ = try bus.cassette("play-pause")
        try await waitUntil("playing over the socket") { try await h.status()["playbackState"]?.stringValue == "PLAYING" }
        try await waitUntil("Playing for playerctl") { try bus.cassette("status") == "Playing" }

        // Next on a station is the station's next item.
        _ = try bus.cassette("next")
        try await waitUntil("the station's second item over the socket") {
            let status = try await h.status()
            return status["mediaProduct"]?["productId"]?.stringValue == "tr-7-02" && status["playbackState"]?.stringValue == "PLAYING"
        }
        let station = try await h.status()["activeStation"]?["id"]?.stringValue
        XCTAssertEqual(station, "st-7")
        try await waitUntil("the second item for playerctl") { try bus.cassette("metadata", "xesam:title") == "Title tr-7-02" }

        _ = try bus.cassette("stop")
        try await waitUntil("stopped over the socket") { try await h.status()["playbackState"]?.stringValue == "IDLE" }
        try await waitUntil("Stopped for playerctl") { try bus.cassette("status") == "Stopped" }
        try await waitUntil("every change signalled, got \((try? followed(h)) ?? [])") {
            try followed(h).last == "Stopped"
        }
        let signalled = try followed(h)
        print("playerctl -p cassette --follow status:\n\(signalled.joined(separator: "\n"))")
        var changes = signalled.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        // station.tune passes through NOT_PLAYING with the first item while it is resolved: a
        // client may or may not see that moment as Paused, depending on when it reads.
        if changes.count > 2, changes[0] == "Stopped", changes[1] == "Paused", changes[2] == "Playing" { changes.remove(at: 1) }
        XCTAssertEqual(changes, ["Stopped", "Playing", "Paused", "Playing", "Stopped"])
        await h.stop()
    }

    /// The name has no per-process suffix: after a restart playerctl finds the player under the
    /// same name and drives a product played over the socket.
    func testSameNameAfterRestart() async throws {
        let h = try PlayerHarness()
        let bus = try PrivateBus(socket: h.dir.path + "/bus")
        try h.addProduct("tr-5", file: try h.makeTrack("tr-5", seconds: 30))
        try h.addProduct("tr-6", file: try h.makeTrack("tr-6", seconds: 30))
        let config = #"{"player":{"mprisBus":"\#(bus.address)"}}"#
        _ = try await h.start(pace: "realtime", config: config)
        try await waitServing(h)
        XCTAssertEqual(try bus.playerctl(["-l"]).output, "cassette")
        let firstOwner = try owner(bus)

        await h.stop()
        try await waitUntil("the name released") { try bus.playerctl(["-l"]).output != "cassette" }
        _ = try await h.start(pace: "realtime", config: config)
        try await waitServing(h)
        XCTAssertEqual(try bus.playerctl(["-l"]).output, "cassette")
        XCTAssertNotEqual(try owner(bus), firstOwner, "a new connection owns the same name")

        _ = try await h.call("player.load", PlayerHarness.product("tr-5"))
        _ = try await h.call("player.play")
        try await waitUntil("Playing for playerctl") { try bus.cassette("status") == "Playing" }
        XCTAssertEqual(try bus.cassette("metadata", "xesam:title"), "Title tr-5")
        _ = try bus.cassette("pause")
        try await waitUntil("paused over the socket") { try await h.status()["playbackState"]?.stringValue == "NOT_PLAYING" }
        _ = try bus.cassette("play")
        try await waitUntil("playing over the socket") { try await h.status()["playbackState"]?.stringValue == "PLAYING" }
        // Next without a station plays the product set with player.setNext.
        _ = try await h.call("player.setNext", PlayerHarness.product("tr-6"))
        _ = try bus.cassette("next")
        try await waitUntil("the next product playing over the socket") {
            let status = try await h.status()
            return status["mediaProduct"]?["productId"]?.stringValue == "tr-6" && status["playbackState"]?.stringValue == "PLAYING"
        }
        await h.stop()
    }

    /// No bus at the configured address: the player starts and plays, `service.status` says
    /// why MPRIS is not served, and once a bus listens there the player takes its name by itself.
    func testPlaysWithoutABusAndJoinsOneThatAppears() async throws {
        let h = try PlayerHarness()
        let socket = h.dir.path + "/late-bus"
        try h.addProduct("tr-6", file: try h.makeTrack("tr-6", seconds: 30))
        _ = try await h.start(pace: "realtime", config: #"{"player":{"mprisBus":"unix:path=\#(socket)"}}"#)
        var mpris: JSONValue = .null
        try await waitUntil("MPRIS waiting: \(mpris)") {
            mpris = try await h.call("service.status")["mpris"] ?? .null
            return mpris["state"]?.stringValue == "waiting"
        }
        XCTAssertEqual(mpris["problem"]?["name"]?.stringValue, "BusUnreachable")
        XCTAssertEqual(mpris["bus"]?.stringValue, "unix:path=\(socket)")
        XCTAssertEqual(mpris["name"]?.stringValue, "org.mpris.MediaPlayer2.cassette")
        _ = try await h.call("player.load", PlayerHarness.product("tr-6"))
        _ = try await h.call("player.play")
        try await waitUntil("playing without a bus") { try await h.status()["playbackState"]?.stringValue == "PLAYING" }
        XCTAssertEqual((h.player?.warningOrWorseLines ?? []).filter { $0.contains("MPRIS") }, [], "a missing bus is not a warning")
        XCTAssertTrue(h.player?.log.contains("notice cassette.player") == true && h.player?.log.contains("MPRIS: not on the") == true)

        let bus = try PrivateBus(socket: socket)
        try await waitServing(h, timeout: 30)
        try await waitUntil("Playing for playerctl") { try bus.cassette("status") == "Playing" }
        let problem = try await h.call("service.status")["mpris"]?["problem"]
        XCTAssertEqual(problem, .null)
        await h.stop()
    }

    /// `mprisBus` off: nothing is served and status says so.
    func testOff() async throws {
        let h = try PlayerHarness()
        _ = try await h.start(config: #"{"player":{"mprisBus":"off"}}"#)
        let mpris = try await h.call("service.status")["mpris"]
        XCTAssertEqual(mpris?["state"]?.stringValue, "off")
        XCTAssertEqual(mpris?["bus"]?.stringValue, "off")
        await h.stop()
    }

    func testBusChoiceFromConfig() throws {
        XCTAssertEqual(try MPRISBusChoice(config: nil), .bus(.system))
        XCTAssertEqual(try MPRISBusChoice(config: "session"), .bus(.session))
        XCTAssertEqual(try MPRISBusChoice(config: "off"), .off)
        XCTAssertEqual(try MPRISBusChoice(config: "unix:path=/run/x"), .bus(.address("unix:path=/run/x")))
        for wrong: JSONValue in ["user", "", "/run/x", true] {
            XCTAssertThrowsError(try MPRISBusChoice(config: wrong), "\(wrong)")
        }
    }

    // MARK: Helpers

    private func waitServing(_ h: PlayerHarness, timeout: Double = 20) async throws {
        var mpris: JSONValue = .null
        try await waitUntil("MPRIS serving: \(mpris)", timeout: timeout) {
            mpris = try await h.call("service.status")["mpris"] ?? .null
            return mpris["state"]?.stringValue == "serving"
        }
    }

    private func followed(_ h: PlayerHarness) throws -> [String] {
        try String(contentsOfFile: h.dir.path + "/follow.txt", encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// The unique connection name that owns the player's name now.
    private func owner(_ bus: PrivateBus) throws -> String {
        let busctl = Process()
        let output = Pipe()
        busctl.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        busctl.arguments = [
            "--address=\(bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetNameOwner", "s", "org.mpris.MediaPlayer2.cassette",
        ]
        busctl.standardOutput = output
        try busctl.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        busctl.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
