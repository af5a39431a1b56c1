import Foundation
import HTTPClient
import MediaDecoder
import OriginClient
import Pacing

/// The pieces of an HLS presentation streamed from the origin (`HLSPiece.path` is each one's
/// URL): a fetch task gets them one `GET` each (`Range` for a byte range), in playlist order,
/// from the piece the reader is in up to `ahead` pieces beyond it, over the player's
/// `OriginClient` (libcurl, the `.streaming` retry rules). Pieces more than one behind the reader
/// are let go (a seek back fetches them again); their lengths are kept for the layout.
///
/// A read of a piece not here yet waits: `.stalled` once the wait outlasts `stallGrace`,
/// `.resumed` when it arrives. A transfer that fails for network reasons is retried for ever with
/// the policy's capped backoff (TIDAL: network errors are retried indefinitely); any other failure
/// (a 4xx, 5xx after the client's retries, a refused TLS edge) fails the stream with a named error.
///
/// Threading: reads come from the decode thread and block on `condition`; the fetch task is told
/// what to fetch through `wanted` and its doorbell.
final class StreamedHLSPieces: HLSPieceStore, @unchecked Sendable {
    struct Options: Sendable {
        /// Pieces fetched beyond the one being read.
        var ahead = 4
        var requestTimeout = 20.0
        var stallGrace = 0.1
        var retry = RetryPolicy.streamingRequest
    }

    let pieces: [HLSPiece]
    private let origin: OriginClient
    private let options: Options
    private let events: @Sendable (ByteSourceEvent) -> Void
    private let doorbell = Doorbell<Ring>()

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var bodies: [Int: [UInt8]] = [:]
    private var lengths: [Int: Int64] = [:]
    private var wanted = 0
    private var failure: (any Error)?
    private var closed = false
    private var stall: StallTracker
    private var fetcher: Task<Void, Never>?

    init(
        pieces: [HLSPiece], origin: OriginClient, options: Options = Options(),
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) {
        self.pieces = pieces
        self.origin = origin
        self.options = options
        self.events = events
        stall = StallTracker(grace: options.stallGrace)
        fetcher = Task.detached { [self] in await fetchLoop() }
    }

    func storedLength(of index: Int) throws -> Int64 {
        if let known = knownStoredLength(of: index) { return known }
        return Int64(try waitFor(index).count)
    }

    func knownStoredLength(of index: Int) -> Int64? {
        condition.withLock { lengths[index] }
    }

    func read(_ index: Int, offset: Int64, count: Int) throws -> [UInt8] {
        let body = try waitFor(index)
        let start = Int(offset)
        guard start >= 0, start + count <= body.count else {
            throw ByteSourceError(name: "ReadFailed", message: "\(pieces[index].name) has \(body.count) bytes; \(start + count) asked")
        }
        return Array(body[start..<(start + count)])
    }

    func close() {
        let task: Task<Void, Never>? = condition.withLock {
            guard !closed else { return nil }
            closed = true
            bodies = [:]
            condition.broadcast()
            return fetcher
        }
        task?.cancel()
        doorbell.close()
    }

    /// The stored bytes of piece `index`, once here; the reader is now at `index`.
    private func waitFor(_ index: Int) throws -> [UInt8] {
        while true {
            var event: ByteSourceEvent?
            var moved = false
            let body: [UInt8]? = try condition.withLock {
                if closed { throw SourceError.closed("the HLS stream") }
                if let failure { throw failure }
                if wanted != index {
                    wanted = index
                    moved = true
                    for old in bodies.keys where old < index - 1 { bodies[old] = nil }
                }
                if let body = bodies[index] {
                    event = stall.progressed()
                    return body
                }
                event = stall.waiting()
                return nil
            }
            if moved { doorbell.ring() }
            if let event { events(event) }
            if let body { return body }
            condition.withLock {
                if !closed && failure == nil && bodies[index] == nil {
                    _ = condition.wait(until: Date().addingTimeInterval(0.05))
                }
            }
        }
    }

    // MARK: Fetching

    private enum Step { case fetch(Int), wait, stop }

    /// What the fetch task does next: the first missing piece from the reader's on, within
    /// `ahead`; wait when all of those are here; stop once closed or failed.
    private func nextStep() -> Step {
        condition.withLock {
            guard !closed, failure == nil else { return .stop }
            let window = wanted..<min(pieces.count, wanted + options.ahead + 1)
            return window.first { bodies[$0] == nil }.map { .fetch($0) } ?? .wait
        }
    }

    private func fetchLoop() async {
        var networkFailures = 0
        while !Task.isCancelled {
            let index: Int
            switch nextStep() {
            case .stop: return
            case .wait:
                // Everything wanted is here: wait for the reader to move on (nil: closed).
                guard await doorbell.wait() != nil else { return }
                continue
            case .fetch(let missing): index = missing
            }
            do {
                let body = try await fetch(pieces[index])
                networkFailures = 0
                condition.withLock {
                    guard !closed else { return }
                    bodies[index] = body
                    lengths[index] = Int64(body.count)
                    condition.broadcast()
                }
            } catch let error as OriginError where error.transportError != nil && !error.isTLSFailure {
                if Task.isCancelled { return }
                try? await Task.sleep(nanoseconds: UInt64(options.retry.networkDelay(retry: networkFailures) * 1e9))
                networkFailures += 1
            } catch {
                return fail(error)
            }
        }
    }

    /// One piece, whole: `GET` with `Range` for a byte range (a server that ignores it answers
    /// the whole resource, from which the range is cut).
    private func fetch(_ piece: HLSPiece) async throws -> [UInt8] {
        var headers: [String: String] = [:]
        if let length = piece.length {
            headers["Range"] = "bytes=\(piece.offset)-\(piece.offset + length - 1)"
        } else if piece.offset > 0 {
            headers["Range"] = "bytes=\(piece.offset)-"
        }
        let request = HTTPRequest(method: "GET", url: piece.path, headers: headers, timeoutSeconds: options.requestTimeout)
        let response = try await origin.send(request, retry: options.retry)
        switch response.status {
        case 206:
            return response.body
        case 200:
            guard piece.offset > 0 || piece.length != nil else { return response.body }
            let start = Int(piece.offset)
            let end = piece.length.map { start + Int($0) } ?? response.body.count
            guard start <= end, end <= response.body.count else {
                throw SourceError.sourceUnavailable("\(piece.name): the origin's answer is shorter than the range the playlist names")
            }
            return Array(response.body[start..<end])
        default:
            throw SourceError.sourceUnavailable(
                "the origin answered HTTP \(response.status) for \(piece.name): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
    }

    private func fail(_ error: any Error) {
        let first: Bool = condition.withLock {
            guard failure == nil, !closed else { return false }
            failure = error
            condition.broadcast()
            return true
        }
        guard first else { return }
        if let error = error as? SourceError {
            events(error.event)
        } else if let error = error as? OriginError {
            events(.failed(name: error.name, message: error.message))
        } else {
            events(.failed(name: "SourceUnavailable", message: "\(error)"))
        }
    }
}
