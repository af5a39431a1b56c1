import Synchronization
import Wire

/// One injected misbehaviour for one request (see `/_control/faults`). Fields combine:
/// e.g. `{"delayMs":200,"status":503,"retryAfter":1}`.
struct Fault: Sendable, Equatable {
    /// Answer with this status and an error JSON without processing the request.
    var status: Int?
    var subStatus: Int?
    var userMessage: String?
    var retryAfter: Int?
    var delayMs: Int?
    var bytesPerSecond: Int?
    /// Advertise the full Content-Length, then close after this many body bytes.
    var truncateAfter: Int?
    /// Send the head and this many body bytes, then nothing more: the connection stays open and
    /// silent (a hung edge) until the client closes it, or for `OriginLimits.maxFaultDelayMs`.
    var stallAfter: Int?
    /// Close (with a TCP reset) without answering and without processing.
    var reset = false
    /// Process the request fully (e.g. record plays), then reset without answering.
    var commitThenReset = false
    /// Answer 200 with the full body even when a Range was asked for.
    var ignoreRange = false
    /// Answer with this JSON object (plus `serverTime`) instead of processing the request, with
    /// `status` or 200: a hostile or broken origin (a manifest with a bad id, a foreign URL, a
    /// wrong checksum) for the clients' tests.
    var body: JSONValue?
    /// How many requests this fault applies to.
    var repeatCount = 1

    /// Parses one FAULT object; throws a message for the 400 answer on unknown or mistyped fields.
    init(json: JSONValue) throws {
        guard let fields = json.objectValue else { throw FaultError("each fault must be an object") }
        func int(_ key: String) throws -> Int? {
            guard let value = fields[key], !value.isNull else { return nil }
            guard let number = value.intValue, number >= 0 else { throw FaultError("\(key) must be a non-negative integer") }
            return number
        }
        func flag(_ key: String) throws -> Bool {
            guard let value = fields[key], !value.isNull else { return false }
            guard let bool = value.boolValue else { throw FaultError("\(key) must be true or false") }
            return bool
        }
        let known: Set<String> = [
            "status", "subStatus", "userMessage", "retryAfter", "delayMs", "bytesPerSecond",
            "truncateAfter", "stallAfter", "reset", "commitThenReset", "ignoreRange", "repeat", "body",
        ]
        if let unknown = fields.keys.first(where: { !known.contains($0) }) {
            throw FaultError("unknown fault field \(unknown)")
        }
        status = try int("status")
        // 1xx would be taken as an interim answer and leave the exchange open; refuse it.
        if let status, !(200...599).contains(status) { throw FaultError("status must be 200…599") }
        subStatus = try int("subStatus")
        userMessage = fields["userMessage"]?.stringValue
        retryAfter = try int("retryAfter")
        delayMs = try int("delayMs")
        bytesPerSecond = try int("bytesPerSecond")
        truncateAfter = try int("truncateAfter")
        stallAfter = try int("stallAfter")
        reset = try flag("reset")
        commitThenReset = try flag("commitThenReset")
        ignoreRange = try flag("ignoreRange")
        repeatCount = try int("repeat") ?? 1
        if let value = fields["body"], !value.isNull {
            guard value.objectValue != nil else { throw FaultError("body must be a JSON object") }
            body = value
        }
        if repeatCount < 1 { throw FaultError("repeat must be at least 1") }
    }

    var json: JSONValue {
        var fields: [String: JSONValue] = ["repeat": .int(repeatCount)]
        if let status { fields["status"] = .int(status) }
        if let subStatus { fields["subStatus"] = .int(subStatus) }
        if let userMessage { fields["userMessage"] = .string(userMessage) }
        if let retryAfter { fields["retryAfter"] = .int(retryAfter) }
        if let delayMs { fields["delayMs"] = .int(delayMs) }
        if let bytesPerSecond { fields["bytesPerSecond"] = .int(bytesPerSecond) }
        if let truncateAfter { fields["truncateAfter"] = .int(truncateAfter) }
        if let stallAfter { fields["stallAfter"] = .int(stallAfter) }
        if reset { fields["reset"] = true }
        if commitThenReset { fields["commitThenReset"] = true }
        if ignoreRange { fields["ignoreRange"] = true }
        if let body { fields["body"] = body }
        return .object(fields)
    }
}

struct FaultError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// FIFO queues of faults keyed by path prefix. A request takes the head of the queue with
/// the longest prefix of its path that still has faults, so `/media/tr-9-01.flac` can be
/// targeted more precisely than `/media/` when both are queued.
final class FaultInjector: Sendable {
    private let queues = Mutex<[String: [Fault]]>([:])
    /// `/_control/head`: the status every `HEAD` of a media file, image or key is answered with
    /// (an edge whose signed URLs are valid for `GET` only), nil to serve `HEAD` normally.
    private let headRefusal = Mutex<Int?>(nil)

    func refuseHead(with status: Int?) { headRefusal.withLock { $0 = status } }

    /// The status to answer this request with instead of serving it, when `HEAD` is refused.
    func headRefusal(method: String, path: String) -> Int? {
        guard method == "HEAD", ["/media/", "/img/", "/v1/keys/"].contains(where: path.hasPrefix) else { return nil }
        return headRefusal.withLock { $0 }
    }

    var headRefusalJSON: JSONValue { headRefusal.withLock { $0 }.map { ["status": .int($0)] } ?? .null }

    func enqueue(prefix: String, faults: [Fault]) {
        queues.withLock { $0[prefix, default: []].append(contentsOf: faults) }
    }

    /// Removes and returns the fault for this request, if any is queued for its path.
    func pop(for path: String) -> Fault? {
        queues.withLock { queues in
            let candidates = queues.filter { path.hasPrefix($0.key) && !$0.value.isEmpty }
            guard let prefix = candidates.keys.max(by: { $0.count < $1.count }),
                var queue = queues[prefix]
            else { return nil }
            var fault = queue[0]
            if fault.repeatCount > 1 {
                queue[0].repeatCount -= 1
            } else {
                queue.removeFirst()
            }
            queues[prefix] = queue.isEmpty ? nil : queue
            fault.repeatCount = 1
            return fault
        }
    }

    /// Drops every queued fault and the `HEAD` refusal.
    func clear() {
        queues.withLock { $0.removeAll() }
        refuseHead(with: nil)
    }

    /// The pending faults per prefix, for `GET /_control/faults`.
    var pending: JSONValue {
        .object(queues.withLock { $0 }.mapValues { .array($0.map(\.json)) })
    }
}
