import Foundation
import GRDB
import StateDB
import Wire
import XCTest

/// Dates go into the catalog as `Date.databaseText` and come out through `Row.date`, both by
/// hand: the same text GRDB writes for a `Date`, and the same instants GRDB reads back.
final class DateColumnTests: XCTestCase {
    func testDatabaseTextIsGRDBsTextForADate() {
        let dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_763_719_200.5),
            Date(timeIntervalSince1970: 951_782_400.999), Date(timeIntervalSince1970: 4_102_444_799.001),
            Date(timeIntervalSince1970: 1_795_571_541.25),
        ]
        for date in dates {
            XCTAssertEqual(date.databaseText, String.fromDatabaseValue(date.databaseValue), "\(date)")
        }
    }

    func testRowDateReadsWhatGRDBReads() throws {
        let queue = try DatabaseQueue()
        let values: [DatabaseValueConvertible] = [
            "2026-11-25 06:39:32.123", "2026-11-25 06:39:32", "2026-11-25 06:39", "2026-11-25", "2026-11-25T06:39:32.5",
            "2024-02-29 23:59:59.999", "1969-12-31 23:59:59.250", Date(timeIntervalSince1970: 1_795_588_772.125).databaseText,
            Int64(1_795_588_772), 1_795_588_772.5,
        ]
        try queue.read { db in
            for value in values {
                let row = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT ? AS at", arguments: [value]))
                let grdb = try XCTUnwrap(row["at"] as Date?, "\(value)")
                let ours = try XCTUnwrap(row.date("at"), "\(value)")
                XCTAssertEqual(ours.timeIntervalSince1970, grdb.timeIntervalSince1970, accuracy: 1e-6, "\(value)")
            }
            for bad in ["", "soon", "2026-13-01", "2026-11-25 25:00", "2026-11-25 06:39:32.", "2026-11-25 06:39:32 junk"] {
                let row = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT ? AS at", arguments: [bad]))
                XCTAssertNil(row.date("at"), bad)
            }
            XCTAssertNil(try Row.fetchOne(db, sql: "SELECT NULL AS at")?.date("at"))
            XCTAssertNil(try Row.fetchOne(db, sql: "SELECT 1 AS other")?.date("at"), "a column the row does not have")
        }
    }
}
