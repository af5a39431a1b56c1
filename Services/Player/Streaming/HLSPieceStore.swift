import Foundation
import MediaDecoder

#if canImport(Glibc)
    import Glibc
#endif

/// One part of an HLS presentation as the decoder reads it: an init section (`EXT-X-MAP`) or a
/// segment, that is a byte range of a resource, AES-128 encrypted when `key` is set (RFC 8216
/// 4.3.2.4: each range is encrypted on its own, with PKCS#7 padding).
struct HLSPiece: Sendable, Equatable {
    /// Where its bytes are: a local file's absolute path (offlined), or its absolute URL on the
    /// origin (streamed).
    var path: String
    var offset: Int64
    /// nil: to the end of the resource.
    var length: Int64?
    var key: [UInt8]?
    var iv: [UInt8]?
    /// For messages: the name the playlist gives it.
    var name: String
}

/// Where the stored (possibly encrypted) bytes of a presentation's pieces come from, for
/// `HLSByteSource`: files on disk (`LocalHLSPieces`) or the origin (`StreamedHLSPieces`). Called
/// on the decode thread, which may block; `close()` may come from any thread and makes a
/// blocked call throw.
protocol HLSPieceStore: AnyObject, Sendable {
    /// Every piece, in playlist order.
    var pieces: [HLSPiece] { get }
    /// The stored length of piece `index`; blocks until it is known (a streamed piece: arrived).
    func storedLength(of index: Int) throws -> Int64
    /// The stored length when it is known without waiting.
    func knownStoredLength(of index: Int) -> Int64?
    /// Exactly `count` stored bytes of piece `index` from `offset` within it; blocks until they are there.
    func read(_ index: Int, offset: Int64, count: Int) throws -> [UInt8]
    func close()
}

/// The pieces of an offlined presentation: byte ranges of files the catalog names as verified.
final class LocalHLSPieces: HLSPieceStore {
    let pieces: [HLSPiece]

    init(_ pieces: [HLSPiece]) {
        self.pieces = pieces
    }

    func storedLength(of index: Int) throws -> Int64 {
        let piece = pieces[index]
        if let length = piece.length { return length }
        var info = stat()
        guard stat(piece.path, &info) == 0 else { throw ByteSourceError.io("stat(\(piece.path))", errno: errno) }
        return Int64(info.st_size) - piece.offset
    }

    func knownStoredLength(of index: Int) -> Int64? {
        try? storedLength(of: index)
    }

    /// A file shorter than its piece is `ReadFailed` (the catalog said the piece was verified, so
    /// it has been damaged since).
    func read(_ index: Int, offset: Int64, count: Int) throws -> [UInt8] {
        let piece = pieces[index]
        let path = piece.path
        let start = piece.offset + offset
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ByteSourceError.io("open(\(path))", errno: errno) }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress! + filled, count - filled, off_t(start) + off_t(filled)) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw ByteSourceError.io("read(\(path))", errno: errno) }
            guard n > 0 else {
                throw ByteSourceError(name: "ReadFailed", message: "\(path) ends at \(start + Int64(filled)); \(start + Int64(count)) expected")
            }
            filled += n
        }
        return buffer
    }

    func close() {}
}
