import CCurl

/// One libcurl easy handle and its error buffer. Owns both and frees them in deinit.
///
/// A handle is not thread-safe. `CurlHandlePool` lends it to one transfer on one pool thread at
/// a time and takes it back afterwards; that hand-over is why the type is `@unchecked Sendable`.
/// Reusing a handle reuses its open connections; its DNS and TLS session caches are those of
/// the client's `CurlShare`, when it has one.
final class CurlEasy: @unchecked Sendable {
    /// The `CURL *`, owned by this object.
    let handle: UnsafeMutableRawPointer
    /// curl writes a detailed message here on failure; must outlive every transfer on `handle`.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// Held so that it outlives the handle: `curl_easy_cleanup` in deinit detaches the handle first.
    private let share: CurlShare?

    init?(share: CurlShare? = nil) {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        self.share = share
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Forgets every option of the previous transfer (including pointers into its memory) but
    /// keeps the connection and DNS caches; then sets what every transfer needs.
    func reset() throws {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
        // Signals (for DNS timeouts) are unsafe in a multithreaded process.
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        if let share { try set(CURLOPT_SHARE, pointer: share.handle) }
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try check(cassette_curl_setopt_long(handle, option, value), option)
    }

    /// curl copies string options, so `value` need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws {
        try check(cassette_curl_setopt_string(handle, option, value), option)
    }

    /// The pointee must stay valid until the transfer ends (curl keeps the pointer).
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws {
        try check(cassette_curl_setopt_pointer(handle, option, pointer), option)
    }

    func set(_ option: CURLoption, offset: Int64) throws {
        try check(cassette_curl_setopt_off_t(handle, option, curl_off_t(offset)), option)
    }

    func setDataCallback(_ option: CURLoption, _ callback: cassette_curl_data_cb) throws {
        try check(cassette_curl_setopt_data_cb(handle, option, callback), option)
    }

    func setProgressCallback(_ callback: cassette_curl_xferinfo_cb) throws {
        try check(cassette_curl_setopt_xferinfo_cb(handle, callback), CURLOPT_XFERINFOFUNCTION)
    }

    /// Blocks the calling thread until the transfer ends. Call only on a pool thread.
    func perform() -> CURLcode {
        curl_easy_perform(handle)
    }

    func infoLong(_ info: CURLINFO) -> Int? {
        var value = 0
        return cassette_curl_getinfo_long(handle, info, &value) == CURLE_OK ? value : nil
    }

    /// Copies the string curl owns (valid only until the handle's next transfer).
    func infoString(_ info: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>? = nil
        guard cassette_curl_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// The error buffer's text when curl filled it, else the generic text for `code`.
    func message(for code: CURLcode) -> String {
        if errorBuffer[0] != 0 { return String(cString: errorBuffer) }
        return String(cString: curl_easy_strerror(code))
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code != CURLE_OK else { return }
        throw HTTPClientError(
            code: code == CURLE_URL_MALFORMAT ? .invalidURL : .transferFailed,
            message: "curl_easy_setopt(\(option.rawValue)): \(String(cString: curl_easy_strerror(code)))",
            curlCode: Int(code.rawValue))
    }
}
