import BlockingIO
import Foundation
import Glibc
import NIOHTTP1
import Wire

/// One answer of the local media server: status, headers and a body held in memory (playlists,
/// keys, errors) or read from a file range as it is sent.
struct MediaResponse: Sendable {
    enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes of the file at `path` (absolute) from `offset`.
        case file(path: String, offset: Int64, length: Int64)

        var length: Int64 {
            switch self {
            case .bytes(let bytes): Int64(bytes.count)
            case .file(_, _, let length): length
            }
        }
    }

    var status: HTTPResponseStatus
    var headers: [(String, String)]
    var body: Body
    /// When the product's license or offline window ends: a response still being sent then is
    /// cut (the connection reset), so no byte of it leaves after the end. Nil: no end.
    var cutAt: ContinuousClock.Instant?

    init(status: HTTPResponseStatus, headers: [(String, String)], body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The head answering `request`: the headers, the body's length and whether the connection stays open.
    func head(for request: HTTPRequestHead) -> HTTPResponseHead {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        fields.replaceOrAdd(name: "Content-Length", value: String(body.length))
        fields.replaceOrAdd(name: "Connection", value: request.isKeepAlive ? "keep-alive" : "close")
        return HTTPResponseHead(version: request.version, status: status, headers: fields)
    }

    static func error(_ status: HTTPResponseStatus, _ message: String) -> MediaResponse {
        MediaResponse(
            status: status, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")],
            body: .bytes(Array((message + "\n").utf8)))
    }

    /// 403 for a product whose license or offline window has ended, the body naming the error
    /// the player raises for it (`OfflineNotValid`) and, when known, the instant it ended.
    static func offlineNotValid(_ productId: String, endedAt: Date?) -> MediaResponse {
        let when = endedAt.map { " at \(UTCTimestamp.rfc3339($0))" } ?? ""
        return .error(
            .forbidden,
            "OfflineNotValid: \(productId) is offlined but no longer valid: its license or offline window "
                + "ended\(when). The app renews the license or re-validates the product online.")
    }
}

/// File reads for the server, always on NIO's blocking thread pool (`BlockingIO`).
enum MediaFiles {
    struct ShortRead: Error {}

    /// The size of a regular file; nil when absent.
    static func size(_ path: String) async -> Int64? {
        await BlockingIO.run {
            var info = stat()
            guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            return Int64(info.st_size)
        }
    }

    /// Up to `count` bytes from `offset` (fewer at the end of the file).
    static func read(_ path: String, offset: Int64, count: Int) async throws -> [UInt8] {
        try await BlockingIO.run {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw PlayerError(.fileMissing, "cannot open \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let n = buffer.withUnsafeMutableBytes { raw in
                    pread(fd, raw.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break }
                filled += n
            }
            buffer.removeLast(count - filled)
            return buffer
        }
    }

    /// A whole small file (a playlist).
    static func readAll(_ path: String) async throws -> [UInt8] {
        try await BlockingIO.run { try Array(Data(contentsOf: URL(fileURLWithPath: path))) }
    }
}
