import CCurl

/// A transfer that produced no usable HTTP response. HTTP error statuses are not errors:
/// they come back as responses. `name` is stable (logs, the wire's `error.data.name`, tests).
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// The closed set of failure kinds, as a struct so that adding one does not break callers' switches.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Not an absolute http(s) URL, or curl rejected it.
        public static let invalidURL = Code("InvalidURL")
        /// DNS failed, connection refused or reset, nothing received.
        public static let connectionFailed = Code("ConnectionFailed")
        /// The request's timeout (total for `send`, stall for `download`) or the connect timeout expired.
        public static let timeout = Code("Timeout")
        /// The connection closed before `Content-Length` bytes arrived (curl's CURLE_PARTIAL_FILE).
        public static let partialBody = Code("PartialBody")
        /// More redirects than `HTTPClient.Configuration.redirects` allows.
        public static let tooManyRedirects = Code("TooManyRedirects")
        /// TLS handshake or certificate verification failed.
        public static let tlsFailed = Code("TLSFailed")
        /// The task was cancelled, or a download's progress callback returned false.
        public static let cancelled = Code("Cancelled")
        /// The download's file could not be opened or written.
        public static let fileError = Code("FileError")
        /// A 206 whose `Content-Range` does not start at the requested offset; the file was not touched.
        public static let unexpectedContentRange = Code("UnexpectedContentRange")
        /// A `send` body larger than `Configuration.maxResponseBodyBytes`.
        public static let responseTooLarge = Code("ResponseTooLarge")
        /// The client is shutting down.
        public static let shutdown = Code("Shutdown")
        /// libcurl could not be opened (not installed on the device) or its global initialisation failed.
        public static let libraryMissing = Code("HTTPLibraryMissing")
        /// Any other curl failure; `message` and `curlCode` say which.
        public static let transferFailed = Code("TransferFailed")
    }

    public var code: Code
    /// curl's own message (its error buffer when it filled one), or ours.
    public var message: String
    /// The `CURLcode` when curl reported the failure.
    public var curlCode: Int?
    /// For `download`: the file's length when the transfer failed, so a retry can resume from it.
    public var bytesOnDisk: Int64?

    public init(code: Code, message: String, curlCode: Int? = nil, bytesOnDisk: Int64? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.bytesOnDisk = bytesOnDisk
    }

    /// The stable code name, e.g. "ConnectionFailed".
    public var name: String { code.name }

    /// Whether trying again later may succeed (network trouble rather than a bad request).
    /// The retry and backoff policy itself lives with the caller.
    public var isTransient: Bool {
        [.connectionFailed, .timeout, .partialBody].contains(code)
    }

    /// What a `TLSFailed` was about, from curl's code; nil for other errors.
    public enum TLSFailure: String, Sendable {
        /// The server's certificate was not trusted: an unknown CA, another name, expired or
        /// not yet valid (a device clock far off says so too).
        case certificate
        /// The server's public key matched none of the pinned ones.
        case pinnedKey
        /// The CA file could not be read or holds no usable certificate.
        case caFile
        /// The handshake itself failed (no common protocol or cipher, not TLS at all).
        case handshake
    }

    public var tlsFailure: TLSFailure? {
        guard code == .tlsFailed else { return nil }
        switch curlCode.map({ CURLcode(UInt32($0)) }) {
        case CURLE_PEER_FAILED_VERIFICATION?, CURLE_SSL_ISSUER_ERROR?, CURLE_SSL_INVALIDCERTSTATUS?: return .certificate
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH?: return .pinnedKey
        case CURLE_SSL_CACERT_BADFILE?, CURLE_SSL_CRL_BADFILE?: return .caFile
        default: return .handshake
        }
    }

    public var description: String {
        var text = "\(code.name): \(message)"
        if let curlCode { text += " (curl \(curlCode))" }
        return text
    }
}

extension HTTPClientError {
    /// Sorts a failed `CURLcode` into a stable code, keeping curl's message.
    init(curl code: CURLcode, message: String) {
        let kind: Code
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            kind = .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT,
            CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_WEIRD_SERVER_REPLY:
            kind = .connectionFailed
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_PARTIAL_FILE:
            kind = .partialBody
        case CURLE_TOO_MANY_REDIRECTS:
            kind = .tooManyRedirects
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_SHUTDOWN_FAILED:
            kind = .tlsFailed
        case CURLE_ABORTED_BY_CALLBACK:
            kind = .cancelled
        case CURLE_WRITE_ERROR:
            kind = .fileError
        default:
            kind = .transferFailed
        }
        self.init(code: kind, message: message, curlCode: Int(code.rawValue))
    }
}
