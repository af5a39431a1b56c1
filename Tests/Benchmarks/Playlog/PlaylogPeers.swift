import Foundation
import GRDB

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The peer of durable recording: a plain SQLite loop through GRDB in this process — WAL,
/// synchronous=FULL, one row per transaction, nothing shared between writers. It is what
/// "durable before answering" costs without a socket, validation or group commit.
final class SQLiteInsertPeer: StatusConnection {
    private let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    static func open(path: String) throws -> DatabasePool {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: path, configuration: config)
        // GRDB turns its writer to synchronous=NORMAL when it enables WAL, after
        // `prepareDatabase`: FULL again, as the catalog does, or no commit would be fsynced.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS plays (id TEXT PRIMARY KEY, body TEXT NOT NULL, createdAt TEXT NOT NULL)")
        }
        return pool
    }

    func status() throws {
        let id = UUID().uuidString.lowercased()
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO plays (id, body, createdAt) VALUES (?, ?, ?)",
                arguments: [id, PlaylogSample.event(id: id), Date()])
        }
    }
}

/// The peer of delivery: the origin ingesting the same number of plays, 500 per request,
/// sent back to back by Foundation's URLSession from this process — the floor set by the
/// origin and loopback HTTP alone, with no outbox to read or mark.
enum OriginIngestPeer {
    static func post(records: Int, batch: Int, baseURL: String) throws -> Double {
        let session = URLSession(configuration: .ephemeral)
        let auth = "Basic " + Data("demo:demo".utf8).base64EncodedString()
        let begin = monotonicNanos()
        var sent = 0
        while sent < records {
            let n = min(batch, records - sent)
            let events = (0..<n).map { _ in PlaylogSample.event(id: UUID().uuidString.lowercased()) }.joined(separator: ",")
            var request = URLRequest(url: URL(string: baseURL + "/v1/plays")!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(auth, forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"events":[\#(events)]}"#.utf8)
            let outcome = PeerOutcome()
            session.dataTask(with: request) { _, response, error in
                outcome.finish(status: (response as? HTTPURLResponse)?.statusCode ?? 0, error: error)
            }.resume()
            let (status, failure) = outcome.wait()
            if let failure { throw BenchError("peer POST failed: \(failure)") }
            guard status == 200 else { throw BenchError("peer POST answered \(status)") }
            sent += n
        }
        return Double(monotonicNanos() - begin) / 1e9
    }
}

/// One URLSession answer handed from its callback thread to the waiting loop.
private final class PeerOutcome: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var status = 0
    private var error: Error?

    func finish(status: Int, error: Error?) {
        self.status = status
        self.error = error
        done.signal()
    }

    func wait() -> (Int, Error?) {
        done.wait()
        return (status, error)
    }
}
