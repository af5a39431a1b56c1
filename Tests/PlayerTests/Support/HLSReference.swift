import Foundation
import MediaDecoder
import TestSupport
import XCTest

/// What the device must get from an HLS product of the reference origin: its media playlist
/// `variant` remuxed by ffmpeg (which fetches the key under a license and decrypts), then decoded
/// the way the player decodes.
enum HLSReference {
    static func decoded(_ origin: OriginProcess, variant: String, of product: String = "tr-hls", in h: PlayerHarness) async throws -> [UInt8] {
        let api = OriginAPI(origin: origin)
        let info = try api.json(try await api.get("/v1/playbackinfo/\(product)?mode=offline"))
        let license = try api.json(
            try await api.post(
                "/v1/licenses",
                [
                    "productId": product, "kind": "purchase",
                    "securityToken": info["licenseSecurityToken"] as Any,
                ]))
        let licenseId = try XCTUnwrap(license["licenseId"] as? String)
        let basic = Data("demo:demo".utf8).base64EncodedString()
        let output = h.dir.path + "/reference-\(product)-\(variant).mka"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-nostdin", "-loglevel", "error", "-y",
            "-headers", "Authorization: Basic \(basic)\r\nX-License: \(licenseId)\r\n",
            "-i", origin.baseURL + "/media/\(product)/\(variant)/index.m3u8", "-map", "0:a:0", "-c", "copy", output,
        ]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "ffmpeg remux of \(variant)")
        let decoder = try AudioDecoder(path: output, output: DecoderOutputFormat(sampleFormat: .s16))
        var bytes: [UInt8] = []
        while let chunk = try decoder.nextChunk() { bytes += chunk.samples }
        return bytes
    }
}
