import XCTest

@testable import downloader

/// StateDB paths reach the file system only when every component is a plain origin id.
final class MediaPathTests: XCTestCase {
    func testOnlyPlainRelativePathsAreAccepted() throws {
        let x128 = String(repeating: "x", count: 128)
        for good in ["tracks/tr-9-01.mp3", "hls/vid-1/v0/seg000.ts", "a", "tracks/...", "tracks/\(x128)"] {
            XCTAssertTrue(MediaFolder.isPlainRelative(good), good)
        }
        for bad in [
            "", "/tracks/a", "tracks/", "tracks//a", "tracks/../a", "tracks/./a", "..", ".", "tracks/a b",
            "tracks/é", "tracks/\(x128)x", "tracks/a\0b", "tracks\\a",
        ] {
            XCTAssertFalse(MediaFolder.isPlainRelative(bad), bad.debugDescription)
        }
        let store = MediaFolder(stateDirectory: "/state")
        XCTAssertEqual(try store.absolute("tracks/a.mp3"), "/state/media/tracks/a.mp3")
        XCTAssertThrowsError(try store.absolute("../catalog.sqlite"))
    }
}
