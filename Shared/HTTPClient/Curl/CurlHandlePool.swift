import Synchronization

/// Idle easy handles kept for reuse, so consecutive requests to the origin reuse its connections.
/// Owns the idle handles; a checked-out handle belongs to its transfer until `checkIn`. Every
/// handle it makes is attached to one `CurlShare` (DNS and TLS sessions), made with the first
/// handle, so a client that never transferred has not touched libcurl.
final class CurlHandlePool: Sendable {
    private let idle = Mutex<[CurlEasy]>([])
    private let share = Mutex<CurlShare??>(nil)
    private let maxIdle: Int

    init(maxIdle: Int) {
        self.maxIdle = maxIdle
    }

    /// An idle handle, or a new one. Throws when curl cannot allocate one.
    func checkOut() throws -> CurlEasy {
        if let reused = idle.withLock({ $0.popLast() }) { return reused }
        // Without a share (curl could not make one), handles work alone: correct, only slower.
        let shared = share.withLock { made in
            if let made { return made }
            let new = CurlShare()
            made = .some(new)
            return new
        }
        guard let fresh = CurlEasy(share: shared) else {
            throw HTTPClientError(code: .transferFailed, message: "curl_easy_init failed")
        }
        return fresh
    }

    /// Takes the handle back; beyond `maxIdle` it is freed (closing its connections).
    func checkIn(_ easy: CurlEasy) {
        idle.withLock { handles in
            if handles.count < maxIdle { handles.append(easy) }
        }
    }
}
