import Foundation
import MediaDecoder
import TestSupport
import XCTest

@testable import player

/// `HLSByteSource` against segments encrypted by another implementation (`openssl enc`), the
/// way RFC 8216 5.2 says when a playlist gives no IV: the media sequence number, big-endian.
final class HLSByteSourceTests: XCTestCase {
    private func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, arguments.joined(separator: " "))
    }

    func testSegmentsJoinDecryptedWithSequenceIVsAndByteRanges() throws {
        let dir = try TestDirectory(prefix: "hbs")
        defer { dir.remove() }
        let key: [UInt8] = (0..<16).map { UInt8($0 * 7 + 3) }
        let hexKey = key.map { String(format: "%02x", $0) }.joined()
        // Three segments of uneven length (padding 1…16 bytes), media sequence from 41.
        var plain: [[UInt8]] = []
        var pieces: [HLSPiece] = []
        for (index, length) in [188 * 50, 188 * 33 + 5, 16 * 40].enumerated() {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            plain.append(bytes)
            let clear = dir.path + "/clear\(index)", sealed = dir.path + "/seg\(index).ts"
            try Data(bytes).write(to: URL(fileURLWithPath: clear))
            let iv = SourceResolver.sequenceIV(41 + index)
            XCTAssertEqual(iv.count, 16)
            try run([
                "openssl", "enc", "-aes-128-cbc", "-K", hexKey, "-iv", iv.map { String(format: "%02x", $0) }.joined(),
                "-in", clear, "-out", sealed,
            ])
            pieces.append(HLSPiece(path: sealed, offset: 0, length: nil, key: key, iv: iv, name: "seg\(index).ts"))
        }
        // A clear piece read as a byte range of a larger file.
        let tail: [UInt8] = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        try Data([0xEE, 0xEE] + tail + [0xEE]).write(to: URL(fileURLWithPath: dir.path + "/ranged.bin"))
        pieces.append(HLSPiece(path: dir.path + "/ranged.bin", offset: 2, length: 3000, key: nil, iv: nil, name: "ranged.bin"))
        plain.append(tail)
        let expected = plain.flatMap { $0 }

        let source = HLSByteSource(pieces: pieces)
        XCTAssertEqual(source.size, Int64(expected.count))
        var read: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            read += buffer[..<count]
        }
        XCTAssertTrue(read == expected, "joined and decrypted: \(read.count) bytes, \(expected.count) expected")
        // A seek into the middle of the second segment reads on from there, across borders.
        let middle = plain[0].count + 1001
        try source.seek(to: Int64(middle))
        var rest: [UInt8] = []
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            rest += buffer[..<count]
        }
        XCTAssertTrue(rest == Array(expected[middle...]))
        // A wrong key is a named failure, not noise.
        let wrong = HLSByteSource(pieces: [
            HLSPiece(
                path: pieces[0].path, offset: 0, length: nil, key: [UInt8](repeating: 1, count: 16),
                iv: pieces[0].iv, name: "seg0.ts")
        ])
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try wrong.read(into: $0) }) { error in
            XCTAssertEqual((error as? ByteSourceError)?.name, "DecryptFailed", "\(error)")
        }
        source.close()
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try source.read(into: $0) })
    }
}
