import Foundation
import MediaDecoder
import OriginClient
import TestSupport
import XCTest

@testable import player

/// Playback catching up with the bytes: a throttled stream and a slowly written download stall
/// and resume; a download that fails underneath raises its error; flaky links are retried.
final class StreamingStallTests: XCTestCase {
    func testThrottledStreamStallsAndResumesAndDeliversEveryByte() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        try await api.injectFaults("/media/tr-8.mp3", [["bytesPerSecond": 150_000, "repeat": 100]])
        let events = SourceEventLog()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api), cache: try fixture.cache())
        let played = try await resolver.resolve(productId: "tr-8", quality: nil, offlineMode: false, events: events.sink)
        XCTAssertEqual(played.kind, "stream")
        let decoded = try await StreamingFixtures.decodeAll(played.source)
        played.source.close()
        await assertSameBytes(decoded, try StreamingFixtures.decodeAll(path: api.origin.dataDirectory.appendingPathComponent("media/tr-8.mp3").path))
        let seen = events.all
        XCTAssertGreaterThanOrEqual(seen.filter { $0 == .stalled }.count, 1, "\(seen)")
        XCTAssertEqual(seen.filter { $0 == .stalled }.count, seen.filter { $0 == .resumed }.count, "\(seen)")
        XCTAssertEqual(seen.first, .stalled)
        XCTAssertFalse(seen.contains { if case .failed = $0 { true } else { false } })
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertGreaterThan(requests["/media/tr-8.mp3"] ?? 0, 1, "fetched as several Range requests")
    }

    func testFlakyStreamIsRetriedAndStillComplete() async throws {
        let api = try await StreamingFixtures.origin()
        let client = try StreamingFixtures.client(api)
        try await api.injectFaults("/media/tr-1.flac", [["truncateAfter": 5_000], ["status": 503], ["reset": true], ["ignoreRange": true]])
        let source = try HTTPStreamSource(url: api.origin.baseURL + "/media/tr-1.flac", origin: client, cache: nil, events: { _ in })
        await assertSameBytes(try await StreamingFixtures.readAll(source), try StreamingFixtures.originMedia(api, "tr-1.flac"))
        source.close()
    }

    func testSeekingAheadFetchesFromTheNewPosition() async throws {
        let api = try await StreamingFixtures.origin()
        let client = try StreamingFixtures.client(api)
        let expected = try StreamingFixtures.originMedia(api, "tr-7b.flac")
        var options = HTTPStreamSource.Options()
        options.firstChunk = 16 * 1024
        options.maxChunk = 16 * 1024
        options.minChunk = 16 * 1024
        let source = try HTTPStreamSource(
            url: api.origin.baseURL + "/media/tr-7b.flac", origin: client, cache: nil,
            options: options, events: { _ in })
        let offset = Int64(expected.count - 20_000)
        try source.seek(to: offset)
        await assertSameBytes(try await StreamingFixtures.readAll(source), Array(expected[Int(offset)...]))
        try source.seek(to: 0)
        await assertSameBytes(try await StreamingFixtures.readAll(source), expected)
        source.close()
    }

    func testSlowlyWrittenDownloadStallsAndResumes() async throws {
        let fixture = try CatalogFixture()
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let relative = try fixture.addFile(productId: "tr-9-01", bytes: [], state: "partial", declaredSize: bytes.count)
        try fixture.addOfflineProduct(requested: "tr-9-01", actual: "tr-9-01", state: "downloading", validUntil: nil)
        let part = fixture.mediaDirectory + "/" + relative + ".part"
        let events = SourceEventLog()
        let catalog = fixture.catalog
        let source = GrowingFileSource(
            path: fixture.mediaDirectory + "/" + relative, declaredSize: Int64(bytes.count), pollInterval: 0.02, stallGrace: 0.05,
            progress: { SourceStore(catalog: catalog).progress(relativePath: relative) },
            events: events.sink)
        // The writer: three bursts with pauses, then the rename and 'verified'.
        let writer = Thread {
            let handle = FileHandle(forWritingAtPath: part)!
            for burst in 0..<3 {
                usleep(250_000)
                handle.write(Data(bytes[(burst * 100_000)..<((burst + 1) * 100_000)]))
            }
            try? handle.close()
            rename(part, fixture.mediaDirectory + "/" + relative)
            try? fixture.setFile(relative, state: "verified", bytesOnDisk: bytes.count)
        }
        writer.start()
        await assertSameBytes(try await StreamingFixtures.readAll(source), bytes)
        let seen = events.all
        XCTAssertGreaterThanOrEqual(seen.count, 2, "\(seen)")
        XCTAssertEqual(seen, Array(repeating: [ByteSourceEvent.stalled, .resumed], count: seen.count / 2).flatMap { $0 }, "\(seen)")
        source.close()
    }

    func testFailedDownloadRaisesItsErrorThroughTheDecoder() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let bytes = try StreamingFixtures.originMedia(api, "tr-1.flac")
        let relative = try fixture.addFile(
            productId: "tr-1", bytes: Array(bytes.prefix(bytes.count / 2)), state: "partial",
            declaredSize: bytes.count)
        try fixture.addOfflineProduct(requested: "tr-1", actual: "tr-1", state: "downloading", validUntil: nil)
        let events = SourceEventLog()
        let played = try await fixture.resolver(origin: nil).resolve(
            productId: "tr-1", quality: nil, offlineMode: false,
            events: events.sink)
        XCTAssertEqual(played.kind, "download")
        let failer = Thread {
            usleep(300_000)
            try? fixture.setFile(relative, state: "corrupt", error: "NetworkError")
        }
        failer.start()
        let source = played.source
        let caught = try await StreamingFixtures.onOwnThread { () throws -> DecoderError? in
            let decoder = try AudioDecoder(source: source)
            do {
                while try decoder.nextChunk() != nil {}
            } catch let error as DecoderError {
                return error
            }
            return nil
        }
        XCTAssertEqual(caught?.name, "SourceFailed")
        let underlying = caught?.sourceError as? SourceError
        XCTAssertEqual(underlying?.name, "NetworkError")
        XCTAssertEqual(underlying?.code, 2104)
        XCTAssertEqual(events.all.last, .failed(name: "NetworkError", message: underlying?.message ?? ""))
        XCTAssertEqual(events.all.filter { $0 == .stalled }.count, 1)
        played.source.close()
    }

    func testCloseUnblocksAWaitingRead() throws {
        let fixture = try CatalogFixture()
        let relative = try fixture.addFile(productId: "tr-9-02", bytes: [], state: "partial", declaredSize: 1000)
        let source = GrowingFileSource(
            path: fixture.mediaDirectory + "/" + relative, declaredSize: 1000,
            progress: { .downloading }, events: { _ in })
        let closer = Thread {
            usleep(200_000)
            source.close()
        }
        closer.start()
        var buffer = [UInt8](repeating: 0, count: 10)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try source.read(into: $0) }) {
            XCTAssertEqual(($0 as? SourceError)?.name, "SourceClosed")
        }
    }
}
