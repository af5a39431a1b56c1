import BlockingIO
import HTTPClient
import MediaDecoder
import OriginClient

extension HTTPStreamSource {
    /// The bytes at `url`: from the HTTP cache when it holds them fresh (no request at all), after
    /// a one-byte `If-None-Match` revalidation when it holds them stale with an ETag, else a new
    /// stream (which fills the cache as it goes). The cache's file work runs off the cooperative pool.
    static func open(
        url: String, origin: OriginClient, cache: HTTPCache?, declaredSize: Int64?,
        options: Options = Options(), refresh: (@Sendable () async throws -> String)? = nil,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> any ByteSource {
        let path = HTTPCache.path(of: url)
        if let cache, let hit = await BlockingIO.run({ cache.lookup(path: path) }) {
            switch hit {
            case .fresh(_, let file):
                // Evicted between lookup and open: stream instead.
                if let source = await BlockingIO.run({ try? FileByteSource(path: file) }) { return source }
            case .stale(let entry, let file):
                let request = HTTPRequest(
                    method: "GET", url: url,
                    headers: ["If-None-Match": entry.etag ?? "*", "Range": "bytes=0-0"],
                    timeoutSeconds: options.requestTimeout)
                if let response = try? await origin.send(request, retry: .streaming), response.status == 304 {
                    let control = CacheControl(header: response.headers["cache-control"])
                    let etag = response.headers["etag"]
                    let source = await BlockingIO.run { () -> FileByteSource? in
                        cache.revalidated(path: path, cacheControl: control, etag: etag)
                        return try? FileByteSource(path: file)
                    }
                    if let source { return source }
                } else {
                    await BlockingIO.run { cache.remove(path: path) }
                }
            }
        }
        return try HTTPStreamSource(
            url: url, origin: origin, cache: cache, declaredSize: declaredSize, options: options,
            refresh: refresh, events: events)
    }
}
