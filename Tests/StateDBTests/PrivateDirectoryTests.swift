import Foundation
import Glibc
import XCTest

@testable import StateDB

/// What the services create in the state dir is closed to other users whatever the umask they
/// were started with: folders exactly 0750, the catalog's files without any bit for others.
final class PrivateDirectoryTests: XCTestCase {
    var dir: String!
    var savedMask: mode_t = 0

    override func setUp() {
        dir = NSTemporaryDirectory() + "private-\(UUID().uuidString)"
        savedMask = umask(0)
    }

    override func tearDown() {
        umask(savedMask)
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0, path)
        return info.st_mode & 0o7777
    }

    func testFoldersAreCreated0750UnderUmask000() throws {
        let created = try PrivateDirectory.create(dir + "/a/b")
        XCTAssertEqual(created, [dir!, dir + "/a", dir + "/a/b"])
        for path in created { XCTAssertEqual(mode(path), 0o750, path) }
    }

    func testAnExistingFolderKeepsItsModeAndAFileInTheWayIsAnError() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        chmod(dir, 0o700)
        XCTAssertEqual(try PrivateDirectory.create(dir), [])
        XCTAssertEqual(mode(dir), 0o700)
        _ = FileManager.default.createFile(atPath: dir + "/file", contents: Data())
        XCTAssertThrowsError(try PrivateDirectory.create(dir + "/file/sub")) { error in
            XCTAssertEqual((error as? DirectoryError)?.errno, ENOTDIR)
        }
    }

    func testTheStateDirAndCatalogAreClosedToOthersUnderUmask000() throws {
        let state = dir + "/state"
        let catalog = try StateDB(stateDirectory: state)
        _ = try catalog.schemaVersion()
        XCTAssertEqual(mode(dir), 0o750)
        XCTAssertEqual(mode(state), 0o750)
        for file in ["catalog.sqlite", "catalog.sqlite-wal", "catalog.lock"] where FileManager.default.fileExists(atPath: state + "/" + file) {
            XCTAssertEqual(mode(state + "/" + file) & 0o007, 0, file)
        }
    }
}
