import BlockingIO
import Crypto
import Foundation
import Glibc
import HTTPClient

/// SHA-256 of a download computed while its bytes arrive (a `DownloadBodyObserver`), so
/// verification never reads a finished file back. It also watches the declared size: a body
/// that runs past it is flagged at once and the transfer stopped, before the disk fills.
///
/// Past `inlineBytes` of a body, the hashing moves to a thread of its own (`HashLane`) fed with
/// copies of the buffers, so a large file is hashed on one core while the transfer thread
/// receives and writes on another: the transfer then runs as fast as without hashing.
/// `hexDigest` waits for that thread to catch up.
final class StreamingSHA256: DownloadBodyObserver, @unchecked Sendable {
    fileprivate struct State {
        var hasher = SHA256()
        var position: Int64 = 0
        var overflowed = false
        /// Hashes the rest of the body once it grew past `inlineBytes`.
        var lane: HashLane?
    }

    /// Small files are hashed on the transfer thread: a hand-over would cost more than it saves.
    static let inlineBytes: Int64 = 4 << 20

    /// Guarded by `lock`: written on the transfer thread, read by the engine.
    private var stateStorage = State()
    private let lock = NSLock()
    let path: String
    let declaredSize: Int64
    /// Told on the transfer thread when a body arrived whole from the network (`bodyReceived`).
    private let onReceived: (@Sendable () -> Void)?

    init(path: String, declaredSize: Int64, onReceived: (@Sendable () -> Void)? = nil) {
        self.path = path
        self.declaredSize = declaredSize
        self.onReceived = onReceived
    }

    func bodyReceived() { onReceived?() }

    /// Bytes hashed so far (equals the file's length while the observer follows it).
    var position: Int64 { withState { $0.position } }
    /// True once more bytes arrived than the manifest declared.
    var overflowed: Bool { withState { $0.overflowed } }
    /// True when the body outgrew `inlineBytes`: `hexDigest` may then wait for the hashing thread.
    var hashesOnItsOwnThread: Bool { withState { $0.lane != nil } }

    /// Hashes the first `length` bytes already in the file (a resume after a restart).
    func absorbExisting(length: Int64) throws {
        let fresh = try Self.hashPrefix(path: path, length: length)
        withState {
            $0.lane?.close()
            $0 = State(hasher: fresh, position: length)
        }
    }

    func bodyBegins(atOffset offset: Int64) {
        let current = withState { $0.position }
        guard offset != current else { return }
        // A 200 (Range ignored) restarts at 0; anything else re-reads the kept prefix.
        let fresh = offset == 0 ? SHA256() : ((try? Self.hashPrefix(path: path, length: offset)) ?? SHA256())
        withState {
            $0.lane?.close()
            $0 = State(hasher: fresh, position: offset)
        }
    }

    /// On the transfer thread, in order. May wait while the hashing thread is far behind.
    func bodyWritten(_ bytes: UnsafeRawBufferPointer) {
        let lane = withState { s -> HashLane? in
            s.position += Int64(bytes.count)
            if s.position > declaredSize { s.overflowed = true }
            if s.lane == nil && s.position > Self.inlineBytes { s.lane = HashLane(continuing: s.hasher) }
            if s.lane == nil { s.hasher.update(bufferPointer: bytes) }
            return s.lane
        }
        lane?.submit(bytes)
    }

    deinit { stateStorage.lane?.close() }

    /// Lowercase hex digest of everything hashed (consumes a copy; the observer stays usable).
    /// Blocks until the hashing thread caught up: call it off the cooperative pool.
    func hexDigest() -> String {
        if let lane = withState({ $0.lane }) {
            let caughtUp = lane.finish()
            withState { s in
                if s.lane === lane {
                    s.hasher = caughtUp
                    s.lane = nil
                }
            }
        }
        let digest = withState { $0.hasher }.finalize()
        return Self.hex(digest)
    }

    /// Lowercase hex of the bytes. Written out by hand: `String(format:)` costs a dynamic cast
    /// per byte, which a station of many small files paid thousands of times.
    static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hashPrefix(path: String, length: Int64) throws -> SHA256 {
        var hasher = SHA256()
        guard length > 0 else { return hasher }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DownloaderError.storage("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var left = length
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, Int(left))) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw DownloaderError.storage("\(path) is shorter than \(length) bytes") }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            left -= Int64(n)
        }
        return hasher
    }
}

extension StreamingSHA256 {
    fileprivate func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&stateStorage)
    }
}

/// A thread that hashes the buffers it is given, in order (an `OrderedWorker`); at most
/// `maxQueued` wait (the transfer thread waits beyond that, so memory stays bounded whatever the
/// link's speed).
final class HashLane: Sendable {
    /// The hash state, touched by the worker's thread only, until `finish` has returned.
    private final class State: @unchecked Sendable {
        var hasher: SHA256
        init(_ hasher: SHA256) { self.hasher = hasher }
    }
    private let state: State
    private let worker: OrderedWorker<[UInt8]>
    private static let maxQueued = 16

    init(continuing hasher: SHA256) {
        let state = State(hasher)
        self.state = state
        worker = OrderedWorker(name: "cassette-sha256", capacity: Self.maxQueued) { bytes in
            bytes.withUnsafeBytes { state.hasher.update(bufferPointer: $0) }
        }
    }

    func submit(_ bytes: UnsafeRawBufferPointer) {
        worker.submit(Array(bytes))
    }

    /// Waits until everything submitted is hashed; returns the state and lets the thread end.
    func finish() -> SHA256 {
        worker.finish()
        return state.hasher
    }

    /// Lets the thread end after what is queued, without waiting for it.
    func close() {
        worker.close()
    }
}
