import XCTest

@testable import Wire

/// The writer's short path for decimals against `Double.description`, which it stands in for.
final class JSONWriterNumberTests: XCTestCase {
    func testDecimalsPrintAsDescriptionPrintsThem() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0.0001, 0.001, 0.05, 0.1, 0.5, 1.5, 2.25, 123.456, 999_999_999.5, 0.000123, 12.000001, -0.25, -7.125]
        for places in [1.0, 1e3, 1e6] {
            for _ in 0..<20_000 {
                let scale = [1.0, 1e3, 1e6, 1e9].randomElement(using: &generator)!
                let v = (Double.random(in: -scale...scale, using: &generator) * places).rounded() / places
                values.append(v)
            }
        }
        for _ in 0..<20_000 { values.append(Double.random(in: -1e10...1e10, using: &generator)) }
        var written = 0
        for v in values where v.rounded() != v {
            var out: [UInt8] = []
            if JSONWriter.writeDecimal(v, into: &out) {
                written += 1
                XCTAssertEqual(String(decoding: out, as: UTF8.self), v.description, "\(v)")
            } else {
                XCTAssertTrue(out.isEmpty)
            }
        }
        XCTAssertGreaterThan(written, 30_000, "the short path should take the rounded decimals")
    }

    func testIntegersAreLeftToTheIntegerPath() {
        for n in [1.0, -3.0, 1e6, 0.0] {
            var out: [UInt8] = []
            XCTAssertFalse(JSONWriter.writeDecimal(n, into: &out))
            XCTAssertTrue(out.isEmpty)
        }
    }

    func testOtherNumbersStillPrint() {
        let value = JSONValue.array([0.00001, 1e-7, 123456789012.5, 0.1 + 0.2, 1.0 / 3, -1e9 - 0.5].map(JSONValue.number))
        let text = String(decoding: JSONWriter.write(value), as: UTF8.self)
        XCTAssertEqual(text, "[1e-05,1e-07,123456789012.5,0.30000000000000004,0.3333333333333333,-1000000000.5]")
    }
}
