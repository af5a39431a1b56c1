import CCurl

/// Scheme, host and port of an absolute URL, parsed by curl's own URL parser (so that it agrees
/// with what curl will connect to). Used to decide whether a redirect, or a URL the origin
/// hands out, leaves the origin.
public struct URLOrigin: Equatable, Sendable {
    public var scheme: String
    public var host: String
    public var port: String

    /// Nil when `url` is not an absolute URL curl can parse, or when libcurl cannot be opened.
    /// The first use in a process opens libcurl (`CurlLibrary.load`), blocking while it maps.
    public init?(_ url: String) {
        guard (try? CurlLibrary.load()) != nil else { return nil }
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { return nil }

        func part(_ which: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var out: UnsafeMutablePointer<CChar>? = nil
            guard curl_url_get(handle, which, &out, flags) == CURLUE_OK, let out else { return nil }
            defer { curl_free(out) }
            return String(cString: out).lowercased()
        }
        guard let scheme = part(CURLUPART_SCHEME), let host = part(CURLUPART_HOST),
            let port = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT))
        else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }
}
