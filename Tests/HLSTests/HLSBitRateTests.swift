import HLS
import XCTest

/// `HLSMediaPlaylist.averageBitRate`: the bytes a playlist reads over its `EXTINF` durations.
final class HLSBitRateTests: XCTestCase {
    private struct NotMedia: Error {}

    private func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let media) = try HLSParser.parse(text) else { throw NotMedia() }
        return media
    }

    func testWholeSegmentsCountTheirSizes() throws {
        let playlist = try media(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXTINF:2,
            a.ts
            #EXTINF:2,
            b.ts
            #EXT-X-ENDLIST
            """)
        let sizes = ["a.ts": Int64(30_000), "b.ts": 20_000]
        XCTAssertEqual(playlist.averageBitRate { sizes[$0] }, 100_000, "50 000 bytes over 4 s")
        XCTAssertNil(playlist.averageBitRate { $0 == "a.ts" ? 30_000 : nil }, "a size unknown")
    }

    /// Byte ranges count their length, not the file's; an init section counts once however many
    /// segments it precedes.
    func testByteRangesAndAnInitSectionCountWhatIsRead() throws {
        let playlist = try media(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:1
            #EXT-X-MAP:URI="all.m4s",BYTERANGE="1000@0"
            #EXTINF:1,
            #EXT-X-BYTERANGE:4000@1000
            all.m4s
            #EXTINF:1,
            #EXT-X-BYTERANGE:5000
            all.m4s
            #EXT-X-ENDLIST
            """)
        XCTAssertEqual(playlist.averageBitRate { _ in 1 << 30 }, 40_000, "(1000 + 4000 + 5000) bytes over 2 s")
    }

    func testAPlaylistOfNoDurationHasNoRate() throws {
        let playlist = try media(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:1
            #EXT-X-ENDLIST
            """)
        XCTAssertNil(playlist.averageBitRate { _ in 100 })
    }
}
