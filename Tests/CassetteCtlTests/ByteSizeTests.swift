import XCTest

@testable import cassettectl

final class ByteSizeTests: XCTestCase {
    func testParsesDecimalBinaryAndPlainSizes() {
        XCTAssertEqual(ByteSize.parse("500M"), 500_000_000)
        XCTAssertEqual(ByteSize.parse("500MB"), 500_000_000)
        XCTAssertEqual(ByteSize.parse("2G"), 2_000_000_000)
        XCTAssertEqual(ByteSize.parse("2g"), 2_000_000_000)
        XCTAssertEqual(ByteSize.parse("1.5GiB"), 1_610_612_736)
        XCTAssertEqual(ByteSize.parse("1.5Gi"), 1_610_612_736)
        XCTAssertEqual(ByteSize.parse("512MiB"), 536_870_912)
        XCTAssertEqual(ByteSize.parse("4k"), 4000)
        XCTAssertEqual(ByteSize.parse("4KiB"), 4096)
        XCTAssertEqual(ByteSize.parse("1T"), 1_000_000_000_000)
        XCTAssertEqual(ByteSize.parse("1048576"), 1_048_576)
        XCTAssertEqual(ByteSize.parse("0"), 0)
        XCTAssertEqual(ByteSize.parse("10 MB"), 10_000_000)
        XCTAssertEqual(ByteSize.parse(" 7B "), 7)
    }

    func testRefusesWhatIsNotASize() {
        for text in ["", "M", "-5M", "1.5", "0.5B", "5X", "5MiBB", "1e3", "five", "1..5G", "99999999999T", "0x10"] {
            XCTAssertNil(ByteSize.parse(text), text)
        }
    }

    func testPrintsDecimalUnits() {
        XCTAssertEqual(ByteSize.format(0), "0 B")
        XCTAssertEqual(ByteSize.format(999), "999 B")
        XCTAssertEqual(ByteSize.format(1000), "1.0 kB")
        XCTAssertEqual(ByteSize.format(25_300), "25.3 kB")
        XCTAssertEqual(ByteSize.format(512_000_000), "512 MB")
        XCTAssertEqual(ByteSize.format(1_400_000_000), "1.4 GB")
        XCTAssertEqual(ByteSize.format(1_610_612_736), "1.6 GB")
        XCTAssertEqual(ByteSize.format(999_999), "1.0 MB")
        XCTAssertEqual(ByteSize.format(-2_000), "-2.0 kB")
        XCTAssertEqual(ByteSize.format(nil), "-")
        XCTAssertEqual(ByteSize.rate(250_000), "250 kB/s")
    }

    func testWhatIsParsedPrintsBack() {
        XCTAssertEqual(ByteSize.format(ByteSize.parse("2G").map(Double.init)), "2.0 GB")
        XCTAssertEqual(ByteSize.format(ByteSize.parse("500M").map(Double.init)), "500 MB")
    }

    func testSizeArgumentTakesNone() {
        XCTAssertEqual(SizeArgument(argument: "4G")?.bytes, 4_000_000_000)
        XCTAssertNotNil(SizeArgument(argument: "none"))
        XCTAssertNil(SizeArgument(argument: "none")?.bytes)
        XCTAssertNil(SizeArgument(argument: "lots"))
    }
}
