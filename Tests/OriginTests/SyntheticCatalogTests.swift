import Crypto
import Foundation
import TestSupport
import XCTest

@testable import cassette_origin

/// `--synthetic ID=COUNTxSIZE`: parsing, and a generated catalog whose recorded sizes and
/// hashes match the bytes on disk.
final class SyntheticCatalogTests: XCTestCase {
    func testSpecsAreParsedWithBinarySuffixes() {
        XCTAssertEqual(SyntheticStationSpec(argument: "st-bench=1000x200k"), SyntheticStationSpec(id: "st-bench", count: 1000, bytes: 204_800))
        XCTAssertEqual(SyntheticStationSpec(argument: "big=1x1g"), SyntheticStationSpec(id: "big", count: 1, bytes: 1 << 30))
        XCTAssertEqual(SyntheticStationSpec(argument: "s_1=3x17"), SyntheticStationSpec(id: "s_1", count: 3, bytes: 17))
        XCTAssertEqual(SyntheticStationSpec(argument: "s=2X3M"), SyntheticStationSpec(id: "s", count: 2, bytes: 3 << 20))
    }

    func testBadSpecsAreRefused() {
        for bad in ["", "st", "=1x1", "st=1", "st=0x10", "st=1x0", "st=1x-5", "st=x10", "st=1x10q", "st/..=1x1", "st=1x65g", "st=100001x1"] {
            XCTAssertNil(SyntheticStationSpec(argument: bad), bad)
        }
    }

    func testTrackIdsArePaddedToTheCount() {
        XCTAssertEqual(SyntheticStationSpec(id: "s", count: 12, bytes: 1).trackId(0), "s-0001")
        XCTAssertEqual(SyntheticStationSpec(id: "s", count: 12_345, bytes: 1).trackId(41), "s-00042")
    }

    func testGeneratedFilesMatchTheirRecordedSizeAndHash() throws {
        let dir = try TestDirectory(prefix: "syn")
        defer { dir.remove() }
        let specs = [SyntheticStationSpec(id: "st-a", count: 3, bytes: 1_000_003), SyntheticStationSpec(id: "st-b", count: 1, bytes: 5)]
        let parameters = GenerationParameters(tracksPerStation: 1, seconds: 1, synthetic: specs)
        let catalog = try CatalogGenerator(directory: URL(fileURLWithPath: dir.path), parameters: parameters).ensure()
        XCTAssertEqual(catalog.stations.map(\.id), ["st-a", "st-b"])
        XCTAssertEqual(catalog.stations[0].trackIds, ["st-a-0001", "st-a-0002", "st-a-0003"])
        XCTAssertEqual(catalog.files.count, 4)
        XCTAssertEqual(Set(catalog.products.map(\.id)), Set(catalog.tracks.map(\.id)))
        var hashes = Set<String>()
        for file in catalog.files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + file.path))
            XCTAssertEqual(bytes.count, file.sizeBytes, file.path)
            XCTAssertEqual(ContentKeys.hex(Array(SHA256.hash(data: bytes))), file.sha256, file.path)
            hashes.insert(file.sha256)
        }
        XCTAssertEqual(hashes.count, 4, "every file has its own content")
        // Served as it is on the next start: the same catalog comes back.
        let again = try CatalogGenerator(directory: URL(fileURLWithPath: dir.path), parameters: parameters).ensure()
        XCTAssertEqual(again.generatedAt, catalog.generatedAt)
    }
}
