import NIOCore
import NIOHTTP1
import Wire

/// One fully read request: the origin's endpoints are small JSON calls or GETs, so the
/// body (at most `OriginLimits.maxRequestBodyBytes`) is collected before routing.
struct OriginRequest: Sendable {
    var method: HTTPMethod
    var version: HTTPVersion
    /// The raw request target, e.g. `/v1/playbackinfo/tr-7?mode=offline`.
    var uri: String
    /// The percent-decoded path without the query.
    var path: String
    var query: [String: String]
    var headers: HTTPHeaders
    var body: [UInt8]
    var keepAlive: Bool

    init(head: HTTPRequestHead, body: [UInt8]) {
        method = head.method
        version = head.version
        uri = head.uri
        headers = head.headers
        self.body = body
        keepAlive = head.isKeepAlive
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = parts.first.map(String.init) ?? "/"
        path = rawPath.removingPercentEncoding ?? rawPath
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                let value = kv.count > 1 ? (String(kv[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(kv[1])) : ""
                query[key] = value
            }
        }
        self.query = query
    }

    /// The path split into its segments: `/v1/stations/st-9/offline` → `["v1","stations","st-9","offline"]`.
    var segments: [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}

/// What a response carries: bytes built in memory, or a slice of a file streamed from disk.
enum ResponseBody: Sendable {
    case bytes([UInt8])
    case file(path: String, offset: Int, length: Int)

    var length: Int {
        switch self {
        case .bytes(let bytes): bytes.count
        case .file(_, _, let length): length
        }
    }
}

struct OriginResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ResponseBody

    init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: ResponseBody = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body with the content type set.
    static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> OriginResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return OriginResponse(status: status, headers: headers, body: .bytes(value.serialized()))
    }
}
