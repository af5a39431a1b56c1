import CCurl

/// curl_global_init is not thread-safe and must run once before any handle exists; a global
/// `let` is initialised exactly once (swift_once), on first use by `HTTPClient.init`.
let curlGlobalInitResult: CURLcode = curl_global_init(cassette_curl_global_default())

