/// One HTTP request as the client sends it. A value: build it, hand it to
/// `HTTPClient.send(_:)` or `HTTPClient.download(_:to:resumeFrom:progress:)`.
public struct HTTPRequest: Sendable {
    /// The method verbatim ("GET", "POST", "PUT", "DELETE", "HEAD", …).
    public var method: String
    /// An absolute `http://` or `https://` URL.
    public var url: String
    /// Extra request headers. A caller-set `Authorization` replaces the client's Basic credentials.
    public var headers: [String: String]
    /// The request body, sent as-is with a `Content-Length`. `nil` sends none.
    public var body: [UInt8]?
    /// For `send`: the whole exchange must finish within this time.
    /// For `download`: the transfer fails when no byte arrives for this long (a stall timeout),
    /// so large files are not cut off after a fixed time.
    public var timeoutSeconds: Double

    public init(
        method: String = "GET", url: String, headers: [String: String] = [:], body: [UInt8]? = nil,
        timeoutSeconds: Double = 30
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutSeconds = timeoutSeconds
    }
}

/// A complete response. Any status is a response, not an error: 404 and 500 come back here.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names are lowercased; repeated headers are joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]
    /// The HTTP version the answer came over: "1.1", or "2" where the server took HTTP/2 in
    /// the TLS handshake (ALPN); nil when unknown.
    public var httpVersion: String?

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = [], httpVersion: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }
}

/// The origin's client token and secret, sent as `Authorization: Basic base64(token:secret)`
/// on every request (docs/origin.md, "Common rules"), and never to another origin after a redirect.
public struct BasicCredentials: Sendable, CustomStringConvertible {
    let token: String
    let secret: String

    public init(token: String, secret: String) {
        self.token = token
        self.secret = secret
    }

    /// Redacted, so that logging a configuration never prints the secret.
    public var description: String { "BasicCredentials(token: \(token), secret: <redacted>)" }
}
