import Foundation

/// Polls `condition` every 50 ms; returns the seconds it took, or throws after `timeout`
/// naming `what` (made only then, so it may carry the logs of that moment).
@discardableResult
public func waitUntil(
    _ what: @autoclosure () -> String, timeout: Double = 20,
    _ condition: () async throws -> Bool
) async throws -> Double {
    let start = Date()
    while Date().timeIntervalSince(start) < timeout {
        if try await condition() { return Date().timeIntervalSince(start) }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    throw OriginTestError("not within \(timeout)s: \(what())")
}
