import Wire
import XCTest

@testable import cassettectl

final class BooleanArgumentTests: XCTestCase {
    func testEverySpellingOfYesAndNo() {
        for word in ["yes", "YES", "Yes", "true", "True", "on", "ON", "1"] {
            XCTAssertEqual(BooleanArgument(argument: word)?.value, true, word)
        }
        for word in ["no", "NO", "false", "FALSE", "off", "Off", "0"] {
            XCTAssertEqual(BooleanArgument(argument: word)?.value, false, word)
        }
        for word in ["", "maybe", "2", "yess", "enable", "y"] {
            XCTAssertNil(BooleanArgument(argument: word), word)
        }
    }

    func testKeyValueSettingsTakeTheSameBooleans() throws {
        XCTAssertEqual(try KeyValueArgument.parse("allowMetered=on").1, .bool(true))
        XCTAssertEqual(try KeyValueArgument.parse("allowMetered=no").1, .bool(false))
        XCTAssertEqual(try KeyValueArgument.parse("allowMetered=true").1, .bool(true))
        // Numbers stay numbers, other words strings.
        XCTAssertEqual(try KeyValueArgument.parse("maxParallel=1").1, .number(1))
        XCTAssertEqual(try KeyValueArgument.parse("offlineAudioQuality=LOSSLESS").1, .string("LOSSLESS"))
        XCTAssertThrowsError(try KeyValueArgument.parse("=1"))
    }
}
