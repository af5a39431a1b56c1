import NIOCore

/// What one frame carries: UTF-8 JSON, optionally behind a UTF-8 byte-order mark
/// (docs/protocol.md, "Framing"). Shared by the server and the client so both read frames alike.
enum FramePayload {
    /// EF BB BF. Allowed once, as the very first bytes of a frame; anywhere else it is
    /// not JSON (RFC 8259 lets a parser ignore a leading one, and editors like to add it).
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Reads a frame's payload as one JSON value, skipping a leading byte-order mark. Whether
    /// the value is an object is left to the caller.
    ///
    /// - Throws: `ParseError` when the payload is not UTF-8 or not exactly one JSON value.
    static func json(_ payload: ByteBuffer) throws(RPCError) -> JSONValue {
        try read(payload) { (bytes) throws(JSONReader.Failure) in try JSONReader.parse(bytes) }
    }

    /// Reads a frame's payload as `json` does, with the same errors, keeping only a request's
    /// envelope members (a server's path: no dictionary of the whole request). nil when the
    /// value is not an object.
    static func envelope(_ payload: ByteBuffer) throws(RPCError) -> JSONReader.Envelope? {
        try read(payload) { (bytes) throws(JSONReader.Failure) in try JSONReader.envelope(bytes) }
    }

    /// Hands `parse` the payload's bytes after a leading byte-order mark, once they are known
    /// to be UTF-8, and names its failure a `ParseError`.
    private static func read<T>(
        _ payload: ByteBuffer, _ parse: (ByteBufferView) throws(JSONReader.Failure) -> T
    ) throws(RPCError) -> T {
        var bytes = payload.readableBytesView
        if bytes.starts(with: byteOrderMark) { bytes = bytes.dropFirst(byteOrderMark.count) }
        // ASCII is UTF-8: only a frame with other bytes pays for a full validation.
        let ascii = bytes.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } } ?? false
        guard ascii || String(validating: bytes, as: UTF8.self) != nil else {
            throw .parseError("The frame is not valid UTF-8.")
        }
        do {
            return try parse(bytes)
        } catch {
            throw .parseError("The frame is not valid JSON: \(error).")
        }
    }
}
