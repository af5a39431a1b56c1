/// What `HTTPClient.download` did to the file, and the response it got.
///
/// Only 200 and 206 responses touch the file. Any other status (404, 416, 5xx, or a redirect
/// the policy did not follow) leaves the file as it was and carries the response body in `body`.
public struct DownloadResult: Sendable {
    public var status: Int
    /// Header names are lowercased.
    public var headers: [String: String]
    /// True when the server answered 206 and the bytes were appended after the resume offset.
    /// False after a 200: the file was truncated and rewritten from byte 0.
    public var resumed: Bool
    /// Bytes this call wrote to the file.
    public var bytesWritten: Int64
    /// The file's length after a 200 or 206 (resume offset + bytes written after a 206);
    /// for any other status the file was not touched and this is the resume offset passed in.
    public var fileSize: Int64
    /// The complete resource's length, from `Content-Range` (206) or `Content-Length` (200), if sent.
    public var expectedSize: Int64?
    /// The body of a response that was not written to the file (e.g. a JSON error), else empty.
    public var body: [UInt8]

    /// True when the file holds the whole resource as far as the server said.
    public var isComplete: Bool {
        guard status == 200 || status == 206 else { return false }
        guard let expectedSize else { return true }
        return fileSize == expectedSize
    }

    public init(
        status: Int, headers: [String: String], resumed: Bool, bytesWritten: Int64, fileSize: Int64,
        expectedSize: Int64?, body: [UInt8]
    ) {
        self.status = status
        self.headers = headers
        self.resumed = resumed
        self.bytesWritten = bytesWritten
        self.fileSize = fileSize
        self.expectedSize = expectedSize
        self.body = body
    }
}
