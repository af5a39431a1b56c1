import CFFmpeg

/// AES-128 in CBC mode, decrypting: what an HLS `#EXT-X-KEY:METHOD=AES-128` segment needs
/// (RFC 8216 5.2). libavutil's AES, because every binary that decodes already loads it.
///
/// Not thread-safe: one decryptor per thread (the decode thread owns the player's).
public final class AESDecryptor {
    public static let blockBytes = 16
    private let context: OpaquePointer

    /// `key`: the 16 key bytes. Throws `DecryptFailed` for any other length.
    public init(key: [UInt8]) throws(ByteSourceError) {
        guard key.count == Self.blockBytes else {
            throw ByteSourceError(name: "DecryptFailed", message: "an AES-128 key has 16 bytes, not \(key.count)")
        }
        do {
            try FFmpegLibraries.load()
        } catch {
            throw ByteSourceError(name: "DecryptFailed", message: error.message)
        }
        guard let context = av_aes_alloc() else { throw ByteSourceError(name: "DecryptFailed", message: "av_aes_alloc failed") }
        guard av_aes_init(context, key, 128, 1) == 0 else {
            av_free(UnsafeMutableRawPointer(context))
            throw ByteSourceError(name: "DecryptFailed", message: "av_aes_init refused the key")
        }
        self.context = context
    }

    deinit { av_free(UnsafeMutableRawPointer(context)) }

    /// Decrypts `cipher` (whole blocks) chained from `iv`; padding is left in place.
    public func decrypt(_ cipher: [UInt8], iv: [UInt8]) throws(ByteSourceError) -> [UInt8] {
        guard cipher.count % Self.blockBytes == 0, iv.count == Self.blockBytes else {
            throw ByteSourceError(
                name: "DecryptFailed",
                message: "AES-128-CBC needs whole 16-byte blocks and a 16-byte IV (got \(cipher.count) bytes, IV \(iv.count))")
        }
        var plain = [UInt8](repeating: 0, count: cipher.count)
        var chain = iv
        plain.withUnsafeMutableBufferPointer { out in
            cipher.withUnsafeBufferPointer { input in
                chain.withUnsafeMutableBufferPointer { ivBytes in
                    av_aes_crypt(context, out.baseAddress, input.baseAddress, Int32(cipher.count / Self.blockBytes), ivBytes.baseAddress, 1)
                }
            }
        }
        return plain
    }

    /// The PKCS#7 padding at the end of a decrypted segment: its length (1…16), or nil when the
    /// bytes are not valid padding (wrong key or a damaged file).
    public static func paddingLength(_ plain: [UInt8]) -> Int? {
        guard let last = plain.last, (1...blockBytes).contains(Int(last)), plain.count >= Int(last) else { return nil }
        return plain.suffix(Int(last)).allSatisfy { $0 == last } ? Int(last) : nil
    }
}
