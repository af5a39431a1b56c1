import Foundation
import XCTest

/// What the tests of `HTTPClientTests` share: files of random words in the server's folder, a
/// port nothing listens on, the echo route's answer and a progress recorder.
extension HTTPClientTests {
    func makeFile(_ name: String, size: Int) throws -> Data {
        // Random words, so that a byte landing at the wrong offset cannot go unnoticed.
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: size)
        data.withUnsafeMutableBytes { bytes in
            for offset in stride(from: 0, to: size, by: 8) {
                withUnsafeBytes(of: generator.next()) { word in
                    bytes.baseAddress!.advanced(by: offset).copyMemory(from: word.baseAddress!, byteCount: min(8, size - offset))
                }
            }
        }
        try data.write(to: root.appendingPathComponent(name))
        return data
    }

    /// A loopback port nothing listens on: bound, then released.
    func unusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw XCTSkip("cannot bind a loopback socket") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct Echo {
        var method: String
        var path: String
        var headers: [String: String]
        var body: [UInt8]

        init(_ bytes: [UInt8]) throws {
            let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] ?? [:]
            method = object["method"] as? String ?? ""
            path = object["path"] as? String ?? ""
            headers = object["headers"] as? [String: String] ?? [:]
            let hex = Array((object["body"] as? String ?? "").utf8)
            body = stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
        }
    }

    /// Progress calls arrive on a pool thread.
    final class Reported: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [(Int64, Int64?)] = []
        func record(_ written: Int64, _ total: Int64?) { lock.withLock { values.append((written, total)) } }
        var last: (Int64, Int64?)? { lock.withLock { values.last } }
    }
}
