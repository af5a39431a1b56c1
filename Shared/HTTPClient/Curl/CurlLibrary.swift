import BlockingIO
import CCurl

/// libcurl, which no binary links: it is opened, and curl_global_init run, the first time a
/// client transfers or parses a URL (see Shared/CCurl/loader.c). Every path into curl starts
/// here, so a device without libcurl gets `HTTPLibraryMissing` instead of a crash.
public enum CurlLibrary {
    /// Opens it, once per process. The first call blocks while about 35 libraries are mapped:
    /// call it where blocking is allowed, or use `loadOffPool`. Throws `HTTPLibraryMissing`
    /// when libcurl cannot be opened or its global initialisation failed.
    public static func load() throws(HTTPClientError) {
        if let failure = cassette_curl_load() {
            throw HTTPClientError(code: .libraryMissing, message: String(cString: failure))
        }
    }

    /// `load`, with the first (blocking) open on a BlockingIO thread instead of the caller's
    /// (a Swift concurrency thread must not block); later calls answer at once.
    public static func loadOffPool() async throws(HTTPClientError) {
        if cassette_curl_load_attempted() == 0 {
            await BlockingIO.run { _ = cassette_curl_load() }
        }
        try load()
    }
}
