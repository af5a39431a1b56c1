import Foundation
import TestSupport
import Wire
import XCTest

extension ServiceProcess {
    /// One call on a connection of its own.
    func call(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        let client = try await client()
        defer { Task { await client.close() } }
        return try await client.call(method, params)
    }

    /// `offline.add` on this downloader and wait for `cached` (60 s at most); the last `offline.status`.
    func offlineCached(_ params: JSONValue) async throws -> JSONValue {
        let added = try await call("offline.add", params)
        let token = try XCTUnwrap(added["token"]?.stringValue)
        let deadline = Date().addingTimeInterval(60)
        var last = added
        while Date() < deadline {
            last = try await call("offline.status", ["token": .string(token)])
            if last["state"]?.stringValue == "cached" { return last }
            if last["state"]?.stringValue == "failed" { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        throw HarnessError("\(params) not cached: \(last)\n\(log.suffix(2000))")
    }
}
