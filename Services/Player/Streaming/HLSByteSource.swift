#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaDecoder

/// One part of an offlined HLS presentation as the decoder reads it: an init section
/// (`EXT-X-MAP`) or a segment, that is a byte range of a local file, AES-128 encrypted when
/// `key` is set (RFC 8216 4.3.2.4: each range is encrypted on its own, with PKCS#7 padding).
struct HLSPiece: Sendable, Equatable {
    /// The file's absolute path.
    var path: String
    var offset: Int64
    /// nil: to the end of the file.
    var length: Int64?
    var key: [UInt8]?
    var iv: [UInt8]?
    /// For messages: the name the playlist gives it.
    var name: String
}

/// An offlined HLS media playlist as one continuous stream of bytes: its init sections and
/// segments joined in playlist order and decrypted, which is what HLS means by a presentation
/// (RFC 8216 3: MPEG-TS segments join into one transport stream, fMP4 fragments follow their
/// init section). The decoder then reads it like a file, seeks included.
///
/// Each piece is read and decrypted whole when the position first enters it (a segment is a few
/// seconds of audio); the decrypted length of an encrypted piece comes from decrypting its last
/// block, when the total size is first asked for. All of it happens on the decode thread, the
/// only caller of `read`, `seek` and `size`; `close()` may come from any thread.
final class HLSByteSource: ByteSource, @unchecked Sendable {
    private let pieces: [HLSPiece]
    private let lock = NSLock()
    private var starts: [Int64]?
    private var total: Int64 = 0
    private var position: Int64 = 0
    private var loaded: (index: Int, bytes: [UInt8])?
    private var decryptors: [[UInt8]: AESDecryptor] = [:]
    private var closed = false

    init(pieces: [HLSPiece]) {
        self.pieces = pieces
    }

    var size: Int64? {
        lock.withLock { () -> Int64? in
            guard (try? layOut()) != nil else { return nil }
            return total
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try lock.withLock {
            guard !closed else { throw ByteSourceError.closed("the HLS presentation") }
            let starts = try layOut()
            guard position < total, buffer.count > 0 else { return 0 }
            let index = Self.piece(containing: position, starts: starts)
            let bytes = try load(index)
            let from = Int(position - starts[index])
            let count = min(buffer.count, bytes.count - from)
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + from, byteCount: count)
            }
            position += Int64(count)
            return count
        }
    }

    func seek(to offset: Int64) throws {
        try lock.withLock {
            guard !closed else { throw ByteSourceError.closed("the HLS presentation") }
            guard offset >= 0 else { throw ByteSourceError(name: "InvalidSeek", message: "offset \(offset) in the HLS presentation") }
            position = offset
        }
    }

    func close() {
        lock.withLock {
            closed = true
            loaded = nil
            decryptors = [:]
        }
    }

    // MARK: Layout

    /// The offset each piece starts at in the joined stream, computed once.
    private func layOut() throws -> [Int64] {
        if let starts { return starts }
        var starts: [Int64] = []
        var offset: Int64 = 0
        for piece in pieces {
            starts.append(offset)
            offset += try plainLength(of: piece)
        }
        self.starts = starts
        total = offset
        return starts
    }

    /// The index of the last piece starting at or before `offset` (empty pieces skipped).
    private static func piece(containing offset: Int64, starts: [Int64]) -> Int {
        var low = 0, high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    private func plainLength(of piece: HLSPiece) throws -> Int64 {
        let stored = try storedLength(of: piece)
        guard let key = piece.key else { return stored }
        let block = Int64(AESDecryptor.blockBytes)
        guard stored >= block, stored % block == 0 else {
            throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) has \(stored) bytes, not whole AES blocks")
        }
        // The last block, chained from the one before it (or the IV for a one-block piece).
        let tail = try Self.read(piece.path, offset: piece.offset + max(0, stored - 2 * block), count: Int(min(stored, 2 * block)))
        let chain = tail.count == 2 * Int(block) ? Array(tail.prefix(Int(block))) : try iv(of: piece)
        let last = try decryptor(key).decrypt(Array(tail.suffix(Int(block))), iv: chain)
        guard let padding = AESDecryptor.paddingLength(last) else {
            throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) does not decrypt with its key (no valid padding)")
        }
        return stored - Int64(padding)
    }

    private func storedLength(of piece: HLSPiece) throws -> Int64 {
        if let length = piece.length { return length }
        var info = stat()
        guard stat(piece.path, &info) == 0 else { throw ByteSourceError.io("stat(\(piece.path))", errno: errno) }
        return Int64(info.st_size) - piece.offset
    }

    // MARK: Bytes

    /// The decrypted bytes of piece `index`, read once.
    private func load(_ index: Int) throws -> [UInt8] {
        if let loaded, loaded.index == index { return loaded.bytes }
        let piece = pieces[index]
        let stored = try Self.read(piece.path, offset: piece.offset, count: Int(try storedLength(of: piece)))
        var bytes = stored
        if let key = piece.key {
            bytes = try decryptor(key).decrypt(stored, iv: try iv(of: piece))
            guard let padding = AESDecryptor.paddingLength(bytes) else {
                throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) does not decrypt with its key (no valid padding)")
            }
            bytes.removeLast(padding)
        }
        loaded = (index, bytes)
        return bytes
    }

    private func iv(of piece: HLSPiece) throws -> [UInt8] {
        guard let iv = piece.iv, iv.count == AESDecryptor.blockBytes else {
            throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) is encrypted but has no 16-byte IV")
        }
        return iv
    }

    private func decryptor(_ key: [UInt8]) throws -> AESDecryptor {
        if let known = decryptors[key] { return known }
        let made = try AESDecryptor(key: key)
        decryptors[key] = made
        return made
    }

    /// Exactly `count` bytes of `path` from `offset`; a shorter file is `ReadFailed` (the catalog
    /// said the piece was verified, so it has been damaged since).
    private static func read(_ path: String, offset: Int64, count: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ByteSourceError.io("open(\(path))", errno: errno) }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled)) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw ByteSourceError.io("read(\(path))", errno: errno) }
            guard n > 0 else {
                throw ByteSourceError(name: "ReadFailed", message: "\(path) ends at \(offset + Int64(filled)); \(offset + Int64(count)) expected")
            }
            filled += n
        }
        return buffer
    }
}
