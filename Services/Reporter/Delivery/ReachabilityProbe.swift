import Dispatch
import Foundation
import HTTPClient
import Pacing

/// Tells whether the origin's host accepts a TCP connection, without sending a request: the
/// cheap check that lets delivery retry as soon as an unreachable origin comes back, instead
/// of sleeping out a backoff of minutes. It only ever shortens a wait; what counts is still
/// the real request.
struct ReachabilityProbe: Sendable {
    let host: String
    let port: String
    var timeoutMillis: Int32 = 1000

    init?(originURL: String) {
        guard let origin = URLOrigin(originURL) else { return nil }
        host = origin.host.hasPrefix("[") ? String(origin.host.dropFirst().dropLast()) : origin.host
        port = origin.port
    }

    /// Connects (and closes at once) on a Dispatch thread: resolution and connect can block.
    func isReachable() async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: connectOnce())
            }
        }
    }

    private func connectOnce() -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, port, &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            defer { entry = info.pointee.ai_next }
            let fd = socket(
                info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return true }
            guard errno == EINPROGRESS else { continue }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&poller, 1, timeoutMillis) == 1 else { continue }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 { return true }
        }
        return false
    }
}

extension ReachabilityProbe {
    /// Probes every `interval` seconds until cancelled, and rings `.reachable` once the origin
    /// answers a connect after failing one.
    func ringWhenBack(_ bell: Doorbell<DeliveryWake>, interval: Double) async {
        var sawDown = false
        while !Task.isCancelled {
            if await isReachable() {
                if sawDown {
                    bell.ring(.reachable)
                    return
                }
            } else {
                sawDown = true
            }
            try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
        }
    }
}
