import Synchronization

/// Idle easy handles kept for reuse, so consecutive requests to the origin reuse its connections.
/// Owns the idle handles; a checked-out handle belongs to its transfer until `checkIn`.
final class CurlHandlePool: Sendable {
    private let idle = Mutex<[CurlEasy]>([])
    private let maxIdle: Int

    init(maxIdle: Int) {
        self.maxIdle = maxIdle
    }

    /// An idle handle, or a new one. Throws when curl cannot allocate one.
    func checkOut() throws -> CurlEasy {
        if let reused = idle.withLock({ $0.popLast() }) { return reused }
        guard let fresh = CurlEasy() else {
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
