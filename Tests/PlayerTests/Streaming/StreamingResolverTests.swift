import Foundation
import MediaDecoder
import OriginClient
import StateDB
import TestSupport
import Wire
import XCTest

@testable import player

/// Each row of the TIDAL source-selection table, against the reference origin and catalog rows
/// written as the downloader writes them.
final class StreamingResolverTests: XCTestCase {
    func testOfflinedAndValidPlaysTheLocalFileWithoutAnyRequest() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        // A replacement offlined: asked for tr-7, holds tr-7b.
        let bytes = try StreamingFixtures.originMedia(api, "tr-7b.flac")
        try fixture.addFile(productId: "tr-7b", bytes: bytes)
        try fixture.addOfflineProduct(requested: "tr-7", actual: "tr-7b")
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api), cache: try fixture.cache())

        for offlineMode in [false, true] {
            let played = try await resolver.resolve(productId: "tr-7", quality: "HIGH", offlineMode: offlineMode, events: { _ in })
            XCTAssertEqual(played.kind, "local")
            XCTAssertEqual(played.context.requestedProductId, "tr-7")
            XCTAssertEqual(played.context.actualProductId, "tr-7b")
            XCTAssertTrue(played.context.offline)
            XCTAssertEqual(played.context.codec, "flac")
            XCTAssertEqual(played.context.trackGain, -6.5)
            await assertSameBytes(try await StreamingFixtures.readAll(played.source), bytes)
            played.source.close()
        }
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests, [:], "an offlined, valid product makes no request at all")
    }

    func testOfflineModeAndNotOfflinedIsAnIllegalPlaybackRequest() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        await assertSourceError(
            try await resolver.resolve(productId: "tr-1", quality: nil, offlineMode: true, events: { _ in }),
            name: "IllegalPlaybackRequest", code: 2100)
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests, [:])
    }

    func testOfflinedButNotValidIsOfflineNotValidInBothModes() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        try fixture.addFile(productId: "tr-1", bytes: try StreamingFixtures.originMedia(api, "tr-1.flac"))
        try fixture.addOfflineProduct(requested: "tr-1", actual: "tr-1", validUntil: Date().addingTimeInterval(-60))
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        for offlineMode in [false, true] {
            await assertSourceError(
                try await resolver.resolve(productId: "tr-1", quality: nil, offlineMode: offlineMode, events: { _ in }),
                name: "OfflineNotValid", code: 2101)
        }
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests, [:], "not valid is decided locally, with no playbackinfo request")
    }

    /// A rental license that ended makes the product not valid, though its offline window
    /// is open; a purchase never ends.
    func testAnEndedRentalIsOfflineNotValidAndAPurchasePlays() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        try fixture.addFile(productId: "tr-1", bytes: try StreamingFixtures.originMedia(api, "tr-1.flac"))
        try fixture.addOfflineProduct(requested: "tr-1", actual: "tr-1", license: .some(Date().addingTimeInterval(-1)))
        try fixture.addFile(productId: "tr-3", bytes: try StreamingFixtures.originMedia(api, "tr-1.flac"))
        try fixture.addOfflineProduct(requested: "tr-3", actual: "tr-3", license: .some(nil))
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        await assertSourceError(
            try await resolver.resolve(productId: "tr-1", quality: nil, offlineMode: true, events: { _ in }),
            name: "OfflineNotValid", code: 2101)
        let bought = try await resolver.resolve(productId: "tr-3", quality: nil, offlineMode: true, events: { _ in })
        XCTAssertEqual(bought.kind, "local")
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests, [:], "license validity is decided locally")
    }

    func testOnlineAndNotOfflinedStreamsThroughPlaybackinfo() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api), cache: try fixture.cache())
        let played = try await resolver.resolve(productId: "tr-1", quality: "LOSSLESS", offlineMode: false, events: { _ in })
        XCTAssertEqual(played.kind, "stream")
        XCTAssertFalse(played.context.offline)
        XCTAssertEqual(played.context.actualProductId, "tr-1")
        XCTAssertEqual(played.context.codec, "flac")
        XCTAssertNotNil(played.context.trackGain)
        let expected = try StreamingFixtures.decodeAll(path: api.origin.dataDirectory.appendingPathComponent("media/tr-1.flac").path)
        await assertSameBytes(try await StreamingFixtures.decodeAll(played.source), expected)
        played.source.close()
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests["/v1/playbackinfo/tr-1"], 1)
        XCTAssertGreaterThanOrEqual(requests["/media/tr-1.flac"] ?? 0, 1)
    }

    func testStreamedReplacementCarriesBothIdsAndTheActualBytes() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        let played = try await resolver.resolve(productId: "tr-7", quality: nil, offlineMode: false, events: { _ in })
        XCTAssertEqual(played.context.requestedProductId, "tr-7")
        XCTAssertEqual(played.context.actualProductId, "tr-7b")
        await assertSameBytes(try await StreamingFixtures.readAll(played.source), try StreamingFixtures.originMedia(api, "tr-7b.flac"))
        played.source.close()
    }

    func testOriginRefusalsPassThroughAsOriginErrors() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        await assertSourceError(
            try await resolver.resolve(productId: "tr-geo", quality: nil, offlineMode: false, events: { _ in }),
            name: "ContentNotAvailableInLocation", code: 4032)
        await assertSourceError(
            try await resolver.resolve(productId: "tr-sub", quality: nil, offlineMode: false, events: { _ in }),
            name: "ContentNotAvailableForSubscription", code: 4033)
    }

    func testNoOriginAndBadIdsAreRefusedByName() async throws {
        let fixture = try CatalogFixture()
        let resolver = fixture.resolver(origin: nil)
        await assertSourceError(
            try await resolver.resolve(productId: "tr-1", quality: nil, offlineMode: false, events: { _ in }),
            name: "NotOfflined", code: 2102)
        await assertSourceError(
            try await resolver.resolve(productId: "../etc/passwd", quality: nil, offlineMode: false, events: { _ in }),
            name: "InvalidParams", code: -32602)
    }

    func testOfflinedFileMissingFromDiskIsFileMissing() async throws {
        let fixture = try CatalogFixture()
        let relative = try fixture.addFile(productId: "tr-3", bytes: [1, 2, 3])
        try fixture.addOfflineProduct(requested: "tr-3", actual: "tr-3")
        try FileManager.default.removeItem(atPath: fixture.mediaDirectory + "/" + relative)
        let resolver = fixture.resolver(origin: nil)
        await assertSourceError(
            try await resolver.resolve(productId: "tr-3", quality: nil, offlineMode: true, events: { _ in }),
            name: "FileMissing", code: 2002)
    }

    func testFileStillDownloadingPlaysFromThePartFile() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let bytes = try StreamingFixtures.originMedia(api, "tr-1.flac")
        let relative = try fixture.addFile(
            productId: "tr-1", bytes: Array(bytes.prefix(bytes.count / 3)), state: "partial",
            declaredSize: bytes.count)
        try fixture.addOfflineProduct(requested: "tr-1", actual: "tr-1", state: "downloading", validUntil: nil)
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api))
        let events = SourceEventLog()
        let played = try await resolver.resolve(productId: "tr-1", quality: nil, offlineMode: false, events: events.sink)
        XCTAssertEqual(played.kind, "download")
        XCTAssertEqual(played.source.size, Int64(bytes.count))
        XCTAssertTrue(played.context.offline)

        // The downloader finishes: the rest, the rename, then 'verified'.
        let part = fixture.mediaDirectory + "/" + relative + ".part"
        let writer = Thread {
            usleep(400_000)
            let handle = FileHandle(forWritingAtPath: part)!
            handle.seekToEndOfFile()
            handle.write(Data(bytes[(bytes.count / 3)...]))
            try? handle.close()
            rename(part, fixture.mediaDirectory + "/" + relative)
            try? fixture.setFile(relative, state: "verified", bytesOnDisk: bytes.count)
        }
        writer.start()
        await assertSameBytes(try await StreamingFixtures.readAll(played.source), bytes)
        XCTAssertEqual(events.all, [.stalled, .resumed])
        played.source.close()
        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests, [:], "a file being downloaded is played from disk")
    }
}

extension StreamingResolverTests {
    /// A paused (or failed) download is not waited for: online, the product is streamed instead.
    func testPausedDownloadIsStreamedInstead() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let bytes = try StreamingFixtures.originMedia(api, "tr-1.flac")
        try fixture.addFile(productId: "tr-1", bytes: Array(bytes.prefix(1000)), state: "partial", declaredSize: bytes.count)
        try fixture.addOfflineProduct(requested: "tr-1", actual: "tr-1", state: "paused", validUntil: nil)
        let played = try await fixture.resolver(origin: try StreamingFixtures.client(api))
            .resolve(productId: "tr-1", quality: nil, offlineMode: false, events: { _ in })
        XCTAssertEqual(played.kind, "stream")
        await assertSameBytes(try await StreamingFixtures.readAll(played.source), bytes)
        played.source.close()
    }
}

func assertSourceError<T>(
    _ expression: @autoclosure () async throws -> T, name: String, code: Int,
    file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        _ = try await expression()
        XCTFail("expected \(name), got a result", file: file, line: line)
    } catch let error as RPCErrorConvertible {
        XCTAssertEqual(error.rpcError.name, name, "\(error)", file: file, line: line)
        XCTAssertEqual(error.rpcError.code, code, "\(error)", file: file, line: line)
    } catch {
        XCTFail("expected \(name), got \(error)", file: file, line: line)
    }
}
