import Wire
import XCTest

@testable import cassettectl

final class OfflineVariantsTests: XCTestCase {
    func testVariantsAndRenditionsAreTwoTables() {
        let offer: JSONValue = [
            "variants": [
                ["bandwidth": 81945, "codecs": "mp4a.40.2", "hasVideo": false],
                ["bandwidth": 387200, "resolution": "320x180", "codecs": "avc1.42c00d,mp4a.40.2", "hasVideo": true],
            ],
            "renditions": [["type": "AUDIO", "language": "fr", "name": "Français", "default": false]],
        ]
        let lines = OfflineVariants.render(offer).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5, lines.joined(separator: "\n"))
        XCTAssertTrue(lines[0].hasPrefix("BANDWIDTH"))
        XCTAssertTrue(lines[1].hasPrefix("81945") && lines[1].hasSuffix("no"), lines[1])
        XCTAssertTrue(lines[2].contains("320x180") && lines[2].hasSuffix("yes"), lines[2])
        XCTAssertTrue(lines[3].hasPrefix("TYPE"))
        XCTAssertTrue(lines[4].contains("Français") && lines[4].hasSuffix("no"), lines[4])
    }
}
