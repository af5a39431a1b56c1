import HTTPClient
import MediaDecoder
import OriginClient

extension HTTPStreamSource {
    /// The bytes at `url`: from the HTTP cache when it holds them fresh (no request at all), after
    /// a one-byte `If-None-Match` revalidation when it holds them stale with an ETag, else a new
    /// stream (which fills the cache as it goes).
    static func open(url: String, origin: OriginClient, cache: HTTPCache?, declaredSize: Int64?,
                     options: Options = Options(), refresh: (@Sendable () async throws -> String)? = nil,
                     events: @escaping @Sendable (ByteSourceEvent) -> Void) async throws -> any ByteSource {
        let path = HTTPCache.path(of: url)
        if let cache, let hit = cache.lookup(path: path) {
            switch hit {
            case .fresh(_, let file):
                // Evicted between lookup and open: stream instead.
                if let source = try? FileByteSource(path: file) { return source }
            case .stale(let entry, let file):
                let request = HTTPRequest(method: "GET", url: url,
                                          headers: ["If-None-Match": entry.etag ?? "*", "Range": "bytes=0-0"],
                                          timeoutSeconds: options.requestTimeout)
                if let response = try? await origin.send(request, retry: .streaming), response.status == 304 {
                    cache.revalidated(path: path, cacheControl: CacheControl(header: response.headers["cache-control"]),
                                      etag: response.headers["etag"])
                    if let source = try? FileByteSource(path: file) { return source }
                } else {
                    cache.remove(path: path)
                }
            }
        }
        return try HTTPStreamSource(url: url, origin: origin, cache: cache, declaredSize: declaredSize, options: options,
                                    refresh: refresh, events: events)
    }
}
