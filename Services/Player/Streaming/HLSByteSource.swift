import Foundation
import MediaDecoder

/// An HLS media playlist as one continuous stream of bytes: its init sections and segments
/// joined in playlist order and decrypted, which is what HLS means by a presentation (RFC 8216 3:
/// MPEG-TS segments join into one transport stream, fMP4 fragments follow their init section).
/// The decoder then reads it like a file. The pieces come from a `HLSPieceStore`: the files of
/// an offlined presentation, or the origin while it is streamed.
///
/// Each piece is read and decrypted whole when the position first enters it (a segment is a few
/// seconds of audio). Where each piece starts in the joined stream is laid out piece by piece as
/// the reader gets there: the decrypted length of an encrypted piece comes from decrypting its
/// last block. The total size is known once every piece's length is known without waiting (at
/// once for files, once every segment arrived for a stream); until then seeks past what is laid
/// out wait for the pieces before them. Reads, seeks and `size` come from the decode thread;
/// `close()` may come from any thread and ends a read waiting for a streamed piece.
final class HLSByteSource: ByteSource, @unchecked Sendable {
    private let store: any HLSPieceStore
    private let pieces: [HLSPiece]
    private let lock = NSLock()
    /// Where each laid-out piece ends in the joined stream (the next one starts there).
    private var ends: [Int64] = []
    private var position: Int64 = 0
    private var loaded: (index: Int, bytes: [UInt8])?
    private var decryptors: [[UInt8]: AESDecryptor] = [:]
    private var closed = false

    /// An offlined presentation: `pieces` are byte ranges of local files.
    convenience init(pieces: [HLSPiece]) {
        self.init(store: LocalHLSPieces(pieces))
    }

    init(store: any HLSPieceStore) {
        self.store = store
        pieces = store.pieces
    }

    var size: Int64? {
        lock.withLock { () -> Int64? in
            guard (try? layOutKnown()) != nil, ends.count == pieces.count else { return nil }
            return ends.last ?? 0
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try lock.withLock {
            guard !closed else { throw ByteSourceError.closed("the HLS presentation") }
            // A damaged piece already on hand fails the first read, before anything is heard.
            try layOutKnown()
            guard buffer.count > 0, let index = try piece(containing: position) else { return 0 }
            let bytes = try load(index)
            let start = index == 0 ? 0 : ends[index - 1]
            let from = Int(position - start)
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
        // First, outside the lock: a read waiting for a streamed piece holds it.
        store.close()
        lock.withLock {
            closed = true
            loaded = nil
            decryptors = [:]
        }
    }

    // MARK: Layout

    /// The non-empty piece holding byte `offset` of the joined stream, laying pieces out as far
    /// as needed; nil past the end.
    private func piece(containing offset: Int64) throws -> Int? {
        while ends.last.map({ $0 <= offset }) ?? true {
            guard ends.count < pieces.count else { return nil }
            try layOutNext()
        }
        // The first piece ending after `offset` (empty pieces end where the one before does).
        var low = 0, high = ends.count - 1
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] > offset { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Lays out every further piece whose length is known without waiting (all of an offlined
    /// presentation; the segments of a stream that arrived).
    private func layOutKnown() throws {
        while ends.count < pieces.count, store.knownStoredLength(of: ends.count) != nil {
            try layOutNext()
        }
    }

    private func layOutNext() throws {
        let index = ends.count
        ends.append((ends.last ?? 0) + (try plainLength(of: index)))
    }

    private func plainLength(of index: Int) throws -> Int64 {
        let piece = pieces[index]
        let stored = try store.storedLength(of: index)
        guard let key = piece.key else { return stored }
        let block = Int64(AESDecryptor.blockBytes)
        guard stored >= block, stored % block == 0 else {
            throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) has \(stored) bytes, not whole AES blocks")
        }
        // The last block, chained from the one before it (or the IV for a one-block piece).
        let tail = try store.read(index, offset: max(0, stored - 2 * block), count: Int(min(stored, 2 * block)))
        let chain = tail.count == 2 * Int(block) ? Array(tail.prefix(Int(block))) : try iv(of: piece)
        let last = try decryptor(key).decrypt(Array(tail.suffix(Int(block))), iv: chain)
        guard let padding = AESDecryptor.paddingLength(last) else {
            throw ByteSourceError(name: "DecryptFailed", message: "\(piece.name) does not decrypt with its key (no valid padding)")
        }
        return stored - Int64(padding)
    }

    // MARK: Bytes

    /// The decrypted bytes of piece `index`, read once.
    private func load(_ index: Int) throws -> [UInt8] {
        if let loaded, loaded.index == index { return loaded.bytes }
        let piece = pieces[index]
        let stored = try store.read(index, offset: 0, count: Int(try store.storedLength(of: index)))
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
}
