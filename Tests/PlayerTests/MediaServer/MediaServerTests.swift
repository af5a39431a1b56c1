import Foundation
import Glibc
import HTTPClient
import TestSupport
import Wire
import XCTest

/// The player's local media server against a real player nobody here wrote: `vid-1` offlined by
/// the real downloader from the reference origin, then decoded frame by frame with
/// `ffmpeg -f framemd5` from the local server and from the origin — the same frames, for the
/// default variant, a chosen bitrate and the French audio rendition. Keys are served (and the
/// player plays the presentation's audio) only while the product is valid; unknown paths are 404.
final class MediaServerTests: XCTestCase {
    /// One origin, a downloader and a player sharing one state directory.
    final class Rig {
        let dir: TestDirectory
        let origin: OriginProcess
        let api: OriginAPI
        var downloader: ServiceProcess
        let player: ServiceProcess
        let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]

        /// The downloader's arguments, kept for a restart.
        let downloaderArgs: [String]

        /// `downloaderConfig`: a config file for the downloader (JSON). `takingOver`: an origin
        /// the rig uses (and discards with it), else one on the shared test catalog.
        init(downloaderConfig: String? = nil, takingOver given: OriginProcess? = nil) throws {
            dir = try TestDirectory(prefix: "cms")
            let origin = try given ?? OriginProcess.start()
            self.origin = origin
            api = OriginAPI(origin: origin)
            var args = ["--origin", origin.baseURL]
            if let downloaderConfig { args += ["--config", try dir.writeConfig(downloaderConfig)] }
            downloaderArgs = args
            downloader = try ServiceProcess("downloader", in: dir, extraArgs: downloaderArgs, environment: credentials)
            try downloader.waitReady()
            player = try ServiceProcess(
                "player", in: dir,
                extraArgs: [
                    "--origin", origin.baseURL, "--audio-device", "null",
                    "--audio-pace", "realtime",
                ],
                environment: credentials.merging(["HOME": dir.path]) { a, _ in a })
            try player.waitReady()
        }

        /// kill -9, then the same downloader started again on the same state.
        func restartDownloaderAfterKill() throws {
            downloader.kill9()
            downloader = try ServiceProcess("downloader", in: dir, extraArgs: downloaderArgs, environment: credentials)
            try downloader.waitReady()
        }

        func get(_ url: String) async throws -> HTTPResponse {
            try await HTTPClient().send(HTTPRequest(method: "GET", url: url, timeoutSeconds: 10))
        }

        func discard() {
            downloader.kill9()
            player.kill9()
            origin.discard()
            dir.remove()
        }

        func call(_ service: ServiceProcess, _ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
            let client = try await service.client()
            defer { Task { await client.close() } }
            return try await client.call(method, params)
        }

        func offline(_ params: JSONValue) async throws -> (token: String, status: JSONValue) {
            let added = try await call(downloader, "offline.add", params)
            let token = try XCTUnwrap(added["token"]?.stringValue)
            let deadline = Date().addingTimeInterval(90)
            var last = added
            while Date() < deadline {
                last = try await call(downloader, "offline.status", ["token": .string(token)])
                if last["state"]?.stringValue == "cached" { return (token, last) }
                if last["state"]?.stringValue == "failed" { break }
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            throw OriginTestError("vid-1 not cached: \(last)\n\(downloader.log.suffix(2000))")
        }
    }

    /// `ffmpeg -i url -map … -f framemd5 -`: one line per decoded frame (stream, dts, pts,
    /// duration, size, MD5), comments left out.
    static func framemd5(_ url: String, maps: [String], headers: String? = nil, input: [String] = []) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["ffmpeg", "-nostdin", "-loglevel", "error"]
        if let headers { arguments += ["-headers", headers] }
        arguments += input
        arguments += ["-i", url] + maps.flatMap { ["-map", $0] } + ["-f", "framemd5", "-"]
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: killer)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        killer.cancel()
        guard process.terminationStatus == 0 else { throw OriginTestError("ffmpeg \(url) exited \(process.terminationStatus): \(errors)") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    /// Equal frame lists; on a difference, the first differing line (the lists are long).
    static func assertSameFrames(_ local: [String], _ remote: [String], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard local != remote else { return }
        let index = (0..<min(local.count, remote.count)).first { local[$0] != remote[$0] } ?? min(local.count, remote.count)
        try? local.joined(separator: "\n").write(toFile: "/tmp/cms-local.framemd5", atomically: true, encoding: .utf8)
        try? remote.joined(separator: "\n").write(toFile: "/tmp/cms-remote.framemd5", atomically: true, encoding: .utf8)
        XCTFail(
            "\(what): \(local.count) local frames, \(remote.count) from the origin; first difference at \(index): "
                + "\(index < local.count ? local[index] : "-") vs \(index < remote.count ? remote[index] : "-")", file: file, line: line)
    }

    /// Headers for ffmpeg at the origin: its Basic credentials and a license for the key.
    static func originHeaders(_ rig: Rig) async throws -> String {
        let info = try rig.api.json(try await rig.api.get("/v1/playbackinfo/vid-1?mode=offline"))
        let license = try rig.api.json(
            try await rig.api.post(
                "/v1/licenses",
                [
                    "productId": "vid-1", "kind": "purchase",
                    "securityToken": info["licenseSecurityToken"] as Any,
                ]))
        let licenseId = try XCTUnwrap(license["licenseId"] as? String)
        let basic = Data("demo:demo".utf8).base64EncodedString()
        return "Authorization: Basic \(basic)\r\nX-License: \(licenseId)\r\n"
    }

    func testFramesThroughTheLocalServerEqualTheOrigins() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        XCTAssertTrue(base.hasPrefix("http://127.0.0.1:"), base)
        let status = try await rig.call(rig.player, "media.server.status")
        XCTAssertEqual(status["running"]?.boolValue, true)
        let headers = try await Self.originHeaders(rig)
        let origin = rig.origin.baseURL + "/media/vid-1"

        // 1. The default variant (v0, English audio muxed, English subtitles).
        let (token, _) = try await rig.offline(["productId": "vid-1"])
        let located = try await rig.call(rig.player, "media.locate", ["productId": "vid-1"])
        XCTAssertEqual(located["source"]?.stringValue, "local")
        XCTAssertEqual(located["path"]?.stringValue, "media/hls/vid-1/master.m3u8")
        let entry = try XCTUnwrap(located["url"]?.stringValue)
        XCTAssertEqual(entry, base + "/p/vid-1/master.m3u8")
        let master = try await HTTPClient().send(HTTPRequest(method: "GET", url: entry, timeoutSeconds: 10))
        XCTAssertEqual(master.status, 200)
        let masterText = String(decoding: master.body, as: UTF8.self)
        XCTAssertTrue(masterText.contains("/p/vid-1/v0/index.m3u8") && !masterText.contains("v1/index.m3u8"), masterText)
        XCTAssertTrue(masterText.contains("/p/vid-1/subs-en/index.m3u8"), "subtitles as WebVTT: \(masterText)")
        let subtitles = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/subs-en/seg000.vtt", timeoutSeconds: 10))
        XCTAssertTrue(String(decoding: subtitles.body, as: UTF8.self).hasPrefix("WEBVTT"))
        // The same decode on both sides: the local master (one variant) against the origin's
        // master with that variant's program (ffmpeg numbers them in playlist order: audio-only
        // 0, v0 1, v1 2; its audio 0 is the French rendition, 1 the muxed track). A decode
        // through a master playlist rounds timestamps unlike one through a media playlist, so
        // media playlists are compared with media playlists.
        let local = try Self.framemd5(entry, maps: ["0:v:0", "0:a:0"])
        let remote = try Self.framemd5(origin + "/master.m3u8", maps: ["0:p:1:v:0", "0:p:1:a:1"], headers: headers)
        XCTAssertGreaterThan(local.count, 100, "video and audio frames of 4 s or more")
        Self.assertSameFrames(local, remote, "default variant")
        let localMedia = try Self.framemd5(base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"])
        let remoteMedia = try Self.framemd5(origin + "/v0/index.m3u8", maps: ["0:v:0", "0:a:0"], headers: headers)
        Self.assertSameFrames(localMedia, remoteMedia, "default variant's media playlist")

        // 2. A chosen bitrate: the top variant.
        _ = try await rig.call(rig.downloader, "offline.delete", ["token": .string(token)])
        let offer = try await rig.call(rig.downloader, "offline.variants", ["productId": "vid-1"])
        let top = try XCTUnwrap(offer["variants"]?.arrayValue?.compactMap { $0["bandwidth"]?.intValue }.max())
        let (second, cachedTop) = try await rig.offline(["productId": "vid-1", "bitrate": .number(Double(top))])
        XCTAssertEqual(cachedTop["variant"]?["resolution"]?.stringValue, "640x360")
        let localTop = try Self.framemd5(entry, maps: ["0:v:0", "0:a:0"])
        let remoteTop = try Self.framemd5(origin + "/master.m3u8", maps: ["0:p:2:v:0", "0:p:2:a:1"], headers: headers)
        Self.assertSameFrames(localTop, remoteTop, "640x360 variant")
        XCTAssertTrue(localTop != local)

        // 3. The French audio rendition.
        _ = try await rig.call(rig.downloader, "offline.delete", ["token": .string(second)])
        let (third, _) = try await rig.offline(["productId": "vid-1", "audioLanguages": ["fr"]])
        let frenchMaster = String(decoding: try await HTTPClient().send(HTTPRequest(method: "GET", url: entry, timeoutSeconds: 10)).body, as: UTF8.self)
        XCTAssertTrue(frenchMaster.contains("URI=\"/p/vid-1/audio-fr/index.m3u8\""), frenchMaster)
        let localFrench = try Self.framemd5(base + "/p/vid-1/audio-fr/index.m3u8", maps: ["0:a:0"])
        let remoteFrench = try Self.framemd5(origin + "/audio-fr/index.m3u8", maps: ["0:a:0"], headers: headers)
        XCTAssertGreaterThan(localFrench.count, 100)
        Self.assertSameFrames(localFrench, remoteFrench, "French rendition")

        // Keys and paths: unknown is 404; the key of a deleted product is refused.
        let unknown = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/v9/nothing.ts", timeoutSeconds: 10))
        XCTAssertEqual(unknown.status, 404)
        let key = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/keys/k-vid-1", timeoutSeconds: 10))
        XCTAssertEqual(key.status, 200)
        XCTAssertEqual(key.body.count, 16)
        _ = try await rig.call(rig.downloader, "offline.delete", ["token": .string(third)])
        let gone = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/keys/k-vid-1", timeoutSeconds: 10))
        XCTAssertNotEqual(gone.status, 200)
        let remoteNow = try await rig.call(rig.player, "media.locate", ["productId": "vid-1"])
        XCTAssertEqual(remoteNow["source"]?.stringValue, "remote")
        XCTAssertEqual(remoteNow["url"]?.stringValue, rig.origin.baseURL + "/media/vid-1/master.m3u8")
        _ = try await rig.call(rig.player, "media.server.stop")
        let stopped = try await rig.call(rig.player, "media.server.status")
        XCTAssertEqual(stopped["running"]?.boolValue, false)
        print("media server: framemd5 equal for v0 (\(local.count) frames), v1 (\(localTop.count)), French audio (\(localFrench.count))")
    }

    func testKeysAreRefusedOnceTheRentalEnded() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        _ = try await rig.offline(["productId": "vid-1", "rentalSeconds": 3600])
        // The audio player plays the presentation's audio while the rental holds.
        let client = try await rig.player.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        let video: JSONValue = ["mediaProduct": ["productId": "vid-1", "productType": "VIDEO", "referenceId": "ref-v"]]
        _ = try await client.call("player.load", video)
        _ = try await client.call("player.play")
        _ = try await events.wait("PLAYING", timeout: 20) { $0.type == "PlaybackStateChanged" && $0.data["playbackState"]?.stringValue == "PLAYING" }
        _ = try await client.call("player.reset")
        let key = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/keys/k-vid-1", timeoutSeconds: 10))
        XCTAssertEqual(key.status, 200)
        // Two hours of server time later the rental is over.
        let moved = try await rig.api.post("/_control/clock", ["offsetSeconds": 7200], authorized: false)
        XCTAssertEqual(moved.status, 200)
        _ = try await rig.call(rig.downloader, "stations.list") // the server's time reaches the catalog
        let state = try await rig.call(rig.downloader, "offline.state", ["productId": "vid-1"])
        XCTAssertEqual(state["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")
        for path in ["keys/k-vid-1", "master.m3u8", "v0/seg000.ts"] {
            let refused = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/p/vid-1/" + path, timeoutSeconds: 10))
            XCTAssertEqual(refused.status, 403, path)
        }
        // …and no longer once it ended: the player needs the key as much as any other player.
        do {
            _ = try await client.call("player.load", video)
            XCTFail("a presentation whose rental ended does not play")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OfflineNotValid", "the load answers why")
        }
        _ = try await events.wait("OfflineNotValid", timeout: 20) { $0.type == "OfflineNotValid" }
    }

    /// Segments throttled at the origin: the presentation downloads over several seconds.
    private func throttle(_ rig: Rig, bytesPerSecond: Int) async throws {
        try await rig.api.injectFaults("/media/vid-1/", [["bytesPerSecond": bytesPerSecond, "repeat": 200]])
    }

    func testADecodeDuringTheDownloadSeesAGrowingPlaylistAndCompletes() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        try await throttle(rig, bytesPerSecond: 40_000)
        let added = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        // The media playlist grows: first without ENDLIST, with some segments listed.
        var growing: String?
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, growing == nil {
            let playlist = try await rig.get(base + "/p/vid-1/v0/index.m3u8")
            let text = String(decoding: playlist.body, as: UTF8.self)
            if playlist.status == 200, text.contains("#EXTINF"), !text.contains("#EXT-X-ENDLIST") { growing = text }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        let partial = try XCTUnwrap(growing, "no growing playlist seen")
        let located = try await rig.call(rig.player, "media.locate", ["productId": "vid-1"])
        XCTAssertEqual(located["state"]?.stringValue, "DOWNLOADING")
        // A real player reads it as a live presentation from its first segment and follows it
        // until ENDLIST appears; the frames are those of the finished presentation.
        let during = try Self.framemd5(
            base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"],
            input: ["-live_start_index", "0"])
        let status = try await rig.call(rig.downloader, "offline.status", ["token": .string(token)])
        _ = try await rig.api.delete("/_control/faults")
        _ = try await rig.offline(["productId": "vid-1"])
        let after = try Self.framemd5(base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"])
        Self.assertSameFrames(during, after, "decode during the download")
        let final = String(decoding: try await rig.get(base + "/p/vid-1/v0/index.m3u8").body, as: UTF8.self)
        XCTAssertTrue(final.contains("#EXT-X-ENDLIST"))
        XCTAssertLessThan(partial.components(separatedBy: "#EXTINF").count, final.components(separatedBy: "#EXTINF").count)
        print(
            "media server: growing playlist \(partial.components(separatedBy: "#EXTINF").count - 1) segments, then complete; status then \(status["state"]?.stringValue ?? "?")"
        )
    }

    func testAKilledDownloaderResumesWithRangeAndEndsWithIdenticalFrames() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        try await throttle(rig, bytesPerSecond: 20_000)
        _ = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1"])
        // Wait until some segment holds bytes in its .part, then kill -9.
        let media = rig.dir.stateDir + "/media/hls/vid-1"
        let deadline = Date().addingTimeInterval(60)
        var parts: [String] = []
        while Date() < deadline {
            let all = (FileManager.default.enumerator(atPath: media)?.allObjects as? [String]) ?? []
            parts = all.filter {
                $0.hasSuffix(".ts.part") && ((try? FileManager.default.attributesOfItem(atPath: media + "/" + $0)[.size] as? Int) ?? 0) > 8_000
            }
            if !parts.isEmpty { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertFalse(parts.isEmpty, "no segment was partly downloaded")
        try rig.restartDownloaderAfterKill()
        _ = try await rig.api.delete("/_control/faults")
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let (_, cached) = try await rig.offline(["productId": "vid-1"])
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])
        let stats = try await rig.api.stats()
        let ranged = ((stats["media"] as? [String: Any])?["rangeAnswers"] as? [String: Any]) ?? [:]
        XCTAssertTrue(ranged.keys.contains { $0.hasPrefix("/media/vid-1/") && $0.hasSuffix(".ts") }, "resumed with Range: \(ranged)")
        let headers = try await Self.originHeaders(rig)
        let local = try Self.framemd5(base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"])
        let remote = try Self.framemd5(rig.origin.baseURL + "/media/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"], headers: headers)
        Self.assertSameFrames(local, remote, "after kill -9 and resume")
        print(
            "media server: kill -9 with \(parts.count) partial segment(s), resumed with Range on \(ranged.keys.filter { $0.hasPrefix("/media/vid-1/") }.count) path(s), frames identical"
        )
    }

    func testProgressiveFilesAreServedWithRange() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let notStarted = try await rig.call(rig.player, "media.server.status")
        XCTAssertEqual(notStarted["running"]?.boolValue, false)
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        let again = try await rig.call(rig.player, "media.server.start")
        XCTAssertEqual(again["url"]?.stringValue, base, "started twice: the same server")
        let (_, _) = try await rig.offline(["productId": "tr-1"])
        let located = try await rig.call(rig.player, "media.locate", ["productId": "tr-1"])
        XCTAssertEqual(located["source"]?.stringValue, "local")
        let path = try XCTUnwrap(located["path"]?.stringValue)
        let url = try XCTUnwrap(located["url"]?.stringValue)
        let file = try Data(contentsOf: URL(fileURLWithPath: rig.dir.stateDir + "/" + path))
        let whole = try await rig.get(url)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(Data(whole.body), file)
        XCTAssertEqual(whole.headers["accept-ranges"], "bytes")
        func ranged(_ range: String) async throws -> HTTPResponse {
            try await HTTPClient().send(HTTPRequest(method: "GET", url: url, headers: ["Range": range], timeoutSeconds: 10))
        }
        let first = try await ranged("bytes=0-99")
        XCTAssertEqual(first.status, 206)
        XCTAssertEqual(Data(first.body), file.prefix(100))
        XCTAssertEqual(first.headers["content-range"], "bytes 0-99/\(file.count)")
        let tail = try await ranged("bytes=-10")
        XCTAssertEqual(Data(tail.body), file.suffix(10))
        let middle = try await ranged("bytes=1000-")
        XCTAssertEqual(Data(middle.body), file.dropFirst(1000))
        let past = try await ranged("bytes=\(file.count)-")
        XCTAssertEqual(past.status, 416)
        let head = try await HTTPClient().send(HTTPRequest(method: "HEAD", url: url, timeoutSeconds: 10))
        XCTAssertEqual(head.headers["content-length"], String(file.count))
        XCTAssertTrue(head.body.isEmpty)
        let post = try await HTTPClient().send(HTTPRequest(method: "POST", url: url, body: [1], timeoutSeconds: 10))
        XCTAssertEqual(post.status, 405)
        // Its poster and thumbnail under the product's URL, as an HLS product's: the origin's bytes.
        let info = try rig.api.json(try await rig.api.get("/v1/playbackinfo/tr-1?mode=offline"))
        for kind in ["poster", "thumbnail"] {
            let originPath = try XCTUnwrap(info.object("images")[kind] as? String)
            let ext = originPath.split(separator: ".").last.map(String.init) ?? ""
            let image = try await rig.get(base + "/p/tr-1/images/\(kind).\(ext)")
            XCTAssertEqual(image.status, 200, kind)
            XCTAssertEqual(Data(image.body), try Data(contentsOf: rig.origin.dataDirectory.appendingPathComponent(String(originPath.dropFirst()))))
            XCTAssertEqual(image.headers["content-type"], "image/png")
        }
        for bad in ["/", "/p/", "/p/tr-1", "/p/../etc/passwd", "/p/tr-1/..%2F..%2Fcatalog.sqlite", "/p/nope/x.flac"] {
            let answer = try await rig.get(base + bad)
            XCTAssertEqual(answer.status, 404, bad)
        }
        let remote = try await rig.call(rig.player, "media.locate", ["productId": "tr-2"])
        XCTAssertEqual(remote["source"]?.stringValue, "remote")
        XCTAssertTrue(remote["url"]?.stringValue?.hasPrefix(rig.origin.baseURL + "/media/") == true, "\(remote)")
        do {
            _ = try await rig.call(rig.player, "media.locate", ["productId": "../x"])
            XCTFail("a product id that is not a plain token is refused")
        } catch {
            XCTAssertEqual((error as? RPCError)?.code, -32602)
        }
    }
}
