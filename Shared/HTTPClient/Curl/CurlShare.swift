import CCurl

/// The DNS cache and TLS session cache that all easy handles of one client share (a curl share
/// handle, its locks in Shared/CCurl/share.c): a handle that opens a new connection to the
/// origin resumes a TLS session another handle negotiated, and skips the lookup. Connections
/// themselves stay per handle (see share.c for why).
///
/// `@unchecked Sendable`: curl takes the share's own locks around every use from any thread;
/// Swift only creates it, hands its pointer to handles and frees it. Every `CurlEasy` attached
/// to it holds it, so it is freed after the last of them.
final class CurlShare: @unchecked Sendable {
    private let share: OpaquePointer

    /// Nil when curl cannot make one; call once libcurl is loaded.
    init?() {
        guard let share = cassette_curl_share_new() else { return nil }
        self.share = share
    }

    deinit {
        cassette_curl_share_free(share)
    }

    /// The `CURLSH *` for `CURLOPT_SHARE`.
    var handle: UnsafeMutableRawPointer? { cassette_curl_share_handle(share) }
}
