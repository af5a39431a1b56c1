import Foundation
import GRDB

/// The `metricTotals` rows of one service: its OpenMetrics totals as earlier runs left them.
public struct MetricTotalsStore: Sendable {
    let catalog: StateDB
    let service: String

    public init(catalog: StateDB, service: String) {
        self.catalog = catalog
        self.service = service
    }

    public func load() async throws -> [String: Double] {
        let service = self.service
        return try await catalog.read { db in
            var values: [String: Double] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM metricTotals WHERE service = ?", arguments: [service]) {
                values[row["name"]] = row["value"]
            }
            return values
        }
    }

    /// One transaction for every value given.
    public func save(_ values: [String: Double]) async throws {
        let service = self.service
        let now = Date()
        try await catalog.write { db in
            for (name, value) in values {
                try db.execute(
                    sql: """
                        INSERT INTO metricTotals(service, name, value, updatedAt) VALUES (?, ?, ?, ?)
                        ON CONFLICT(service, name) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt
                        """, arguments: [service, name, value, now])
            }
        }
    }
}
