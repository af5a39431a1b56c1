import Crypto
import Foundation

/// AES-128 content keys of the demo catalog.
///
/// A key is derived from its id rather than stored, so the HLS segments encrypted at
/// generation time and the keys served by `GET /v1/keys/{keyId}` agree across restarts and
/// regenerations without a secret file to keep in step. This is a demo origin: the
/// derivation is public and offers no protection.
enum ContentKeys {
    static func key(for keyId: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("cassette-demo-key:\(keyId)".utf8))).prefix(16).map { $0 }
    }

    /// Writes `keyId`'s key and the `-hls_key_info_file` ffmpeg's HLS muxer encrypts with (key
    /// URI `/v1/keys/{keyId}`, a fixed IV derived like the key) under `directory/.keys`.
    static func writeKeyInfo(keyId: String, in directory: URL) throws -> URL {
        let keyDirectory = directory.appendingPathComponent(".keys")
        try FileManager.default.createDirectory(at: keyDirectory, withIntermediateDirectories: true)
        let keyFile = keyDirectory.appendingPathComponent("\(keyId).key")
        try Data(key(for: keyId)).write(to: keyFile)
        let keyInfo = keyDirectory.appendingPathComponent("\(keyId).keyinfo")
        let iv = hex(Array(key(for: keyId + "-iv")))
        try "/v1/keys/\(keyId)\n\(keyFile.path)\n\(iv)\n".write(to: keyInfo, atomically: true, encoding: .utf8)
        return keyInfo
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Hex SHA-256 of a file, read in chunks so large media never sits in memory whole.
    static func sha256(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw OriginError(description: "cannot open \(path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
        }
        return hex(Array(hasher.finalize()))
    }

    static func sha256(of bytes: [UInt8]) -> String {
        hex(Array(SHA256.hash(data: bytes)))
    }
}
