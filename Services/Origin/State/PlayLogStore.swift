import Foundation
import Synchronization
import Wire

/// The ingested play log (or consumption log, or metrics log): which ids were accepted, persisted so that
/// a restarted origin still recognises an event it has already counted.
///
/// Each accepted, previously unseen id is appended as one JSON line to `DATA/<name>.jsonl`
/// and the file is fsynced before the request is answered: a client that got its answer
/// may drop the events, so they must already be on disk. A torn last line (a crash during
/// a write) is skipped on reload; that batch was never answered, so the client resends it.
actor PlayLogStore {
    /// The JSON member naming an item's id and the request member holding the list.
    let idKey: String
    let listKey: String
    /// String members every item must carry besides its id and `productId` (a metric's `name`).
    let requiredKeys: [String]
    private let url: URL
    private var descriptor: Int32
    private var ids: Set<String> = []
    private var received = 0
    private var duplicates = 0
    private var rejectedCount = 0
    private var requests = 0

    /// Opens (creating if needed) the log and loads the ids it already holds; throws when
    /// the data directory is not writable.
    init(directory: URL, fileName: String, idKey: String, listKey: String, requiredKeys: [String] = []) throws {
        self.idKey = idKey
        self.listKey = listKey
        self.requiredKeys = requiredKeys
        url = directory.appendingPathComponent(fileName)
        descriptor = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw OriginError(description: "cannot open \(url.path): errno \(errno)")
        }
        if let data = try? Data(contentsOf: url) {
            for line in data.split(separator: UInt8(ascii: "\n")) {
                if let id = (try? JSONValue.parse(Array(line)))?[idKey]?.stringValue { ids.insert(id) }
            }
        }
    }

    struct Outcome: Sendable {
        var accepted: [String]
        var rejected: [JSONValue]
    }

    /// Validates and records a batch. Every valid item is accepted, duplicates included, but
    /// only unseen ids are written and counted. Throws when the log cannot be written; then
    /// nothing of the batch is counted and the caller answers 500 so the client retries.
    func ingest(_ items: [JSONValue], receivedAt: String) throws -> Outcome {
        var accepted: [String] = []
        var rejected: [JSONValue] = []
        var fresh: [String] = []
        var lines: [UInt8] = []
        for (index, item) in items.enumerated() {
            let id = item[idKey]?.stringValue
            guard item.objectValue != nil else {
                rejected.append([idKey: nil, "index": .int(index), "reason": "not an object"])
                continue
            }
            guard let id, !id.isEmpty, id.utf8.count <= 256 else {
                rejected.append([idKey: item[idKey] ?? nil, "index": .int(index), "reason": .string("missing or invalid \(idKey)")])
                continue
            }
            guard let product = item["productId"]?.stringValue, !product.isEmpty else {
                rejected.append([idKey: .string(id), "index": .int(index), "reason": "missing productId"])
                continue
            }
            if let absent = requiredKeys.first(where: { (item[$0]?.stringValue ?? "").isEmpty }) {
                rejected.append([idKey: .string(id), "index": .int(index), "reason": .string("missing \(absent)")])
                continue
            }
            accepted.append(id)
            if ids.contains(id) || fresh.contains(id) {
                continue
            }
            fresh.append(id)
            let line: JSONValue = [idKey: .string(id), "receivedAt": .string(receivedAt), "item": item]
            lines += line.serialized()
            lines.append(UInt8(ascii: "\n"))
        }
        if !lines.isEmpty {
            try appendDurably(lines)
        }
        ids.formUnion(fresh)
        requests += 1
        received += items.count
        rejectedCount += rejected.count
        duplicates += accepted.count - fresh.count
        return Outcome(accepted: accepted, rejected: rejected)
    }

    /// Forgets every id and counter and empties the file (`POST /_control/reset`).
    func reset() throws {
        guard ftruncate(descriptor, 0) == 0, fsync(descriptor) == 0 else {
            throw OriginError(description: "cannot truncate \(url.path): errno \(errno)")
        }
        ids.removeAll()
        received = 0
        duplicates = 0
        rejectedCount = 0
        requests = 0
    }

    /// `unique`: distinct ids on record; `received`: items in all requests; `duplicates`:
    /// accepted items whose id was already known; `requests`: processed batches.
    var stats: JSONValue {
        [
            "unique": .int(ids.count), "received": .int(received), "duplicates": .int(duplicates),
            "rejected": .int(rejectedCount), "requests": .int(requests),
        ]
    }

    func contains(_ id: String) -> Bool {
        ids.contains(id)
    }

    private func appendDurably(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw OriginError(description: "cannot append to \(url.path): errno \(errno)")
            }
            offset += written
        }
        guard fsync(descriptor) == 0 else {
            throw OriginError(description: "cannot fsync \(url.path): errno \(errno)")
        }
    }
}

/// Requests per path (without query), for `GET /_control/stats`.
final class RequestStats: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    /// Requests per HTTP method, all paths together (`GET`, `HEAD`, `POST`, …).
    private let methods = Mutex<[String: Int]>([:])
    /// Per media path: 200 answers whose whole body was written (a complete download from byte 0).
    private let fullBodies = Mutex<[String: Int]>([:])
    /// Per media path: 206 answers started (a client resuming with `Range`).
    private let rangeAnswers = Mutex<[String: Int]>([:])
    /// Items and removals listed by `/v1/catalog/items` answers, all together.
    private let catalogItems = Mutex(0)

    func countCatalogItems(_ n: Int) {
        catalogItems.withLock { $0 += n }
    }

    var catalogItemsServed: Int { catalogItems.withLock { $0 } }

    /// `GET /v1/playbackinfo` requests by mode and the quality they asked: `stream:HIGH`,
    /// `offline:none` (none asked).
    private let qualities = Mutex<[String: Int]>([:])

    func countQuality(mode: String, _ quality: String?) {
        qualities.withLock { $0["\(mode):\(quality ?? "none")", default: 0] += 1 }
    }

    var qualitiesJSON: JSONValue {
        .object(qualities.withLock { $0 }.mapValues { .int($0) })
    }

    func countRequest(path: String, method: String) {
        counts.withLock { $0[path, default: 0] += 1 }
        methods.withLock { $0[method, default: 0] += 1 }
    }

    var methodsJSON: JSONValue {
        .object(methods.withLock { $0 }.mapValues { .int($0) })
    }

    func countFullBody(path: String) {
        fullBodies.withLock { $0[path, default: 0] += 1 }
    }

    func countRangeAnswer(path: String) {
        rangeAnswers.withLock { $0[path, default: 0] += 1 }
    }

    func reset() {
        counts.withLock { $0.removeAll() }
        methods.withLock { $0.removeAll() }
        fullBodies.withLock { $0.removeAll() }
        rangeAnswers.withLock { $0.removeAll() }
        catalogItems.withLock { $0 = 0 }
        qualities.withLock { $0.removeAll() }
    }

    var json: JSONValue {
        .object(counts.withLock { $0 }.mapValues { .int($0) })
    }

    /// `{"fullBodies":{path:n},"rangeAnswers":{path:n}}` for files under `/media/` and `/img/`.
    var mediaJSON: JSONValue {
        [
            "fullBodies": .object(fullBodies.withLock { $0 }.mapValues { .int($0) }),
            "rangeAnswers": .object(rangeAnswers.withLock { $0 }.mapValues { .int($0) }),
        ]
    }
}
