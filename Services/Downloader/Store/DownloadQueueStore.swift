import Catalog
import GRDB

/// The download queue's SQL: which files to fetch next and which running ones are still wanted.
/// The queue is the catalog (`downloads` rows and `files.attempts`).
struct DownloadQueueStore: Sendable {
    let catalog: Catalog

    /// Files not yet verified that some owner still wants, oldest request first.
    func next(limit: Int, maxAttempts: Int) async throws -> [FileJob] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: """
                SELECT f.id, f.url, f.localPath, f.sizeBytes, f.sha256,
                       (SELECT MIN(d.id) FROM downloads d WHERE d.fileId = f.id AND d.state = 'queued') AS firstRequest
                FROM files f
                WHERE f.state IN ('pending', 'partial', 'corrupt') AND f.attempts < ? AND f.url IS NOT NULL
                  AND f.sizeBytes IS NOT NULL AND f.sha256 IS NOT NULL AND firstRequest IS NOT NULL
                ORDER BY firstRequest LIMIT ?
                """, arguments: [maxAttempts, limit])
                .map { FileJob(fileId: $0["id"], url: $0["url"], relative: $0["localPath"], sizeBytes: $0["sizeBytes"], sha256: $0["sha256"]) }
        }
    }

    /// The files among `fileIds` that some owner still wants (a queued request).
    func wanted(among fileIds: [Int64]) async throws -> Set<Int64> {
        try await catalog.read { db in
            try Int64.fetchSet(db, sql: "SELECT DISTINCT fileId FROM downloads WHERE state = 'queued' AND fileId IN (\(fileIds.map(String.init).joined(separator: ",")))")
        }
    }
}
