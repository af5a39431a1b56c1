import Foundation
import StateDB
import TestSupport
import XCTest

@testable import downloader

/// The room admission weighs: a running file reserves what its `.part` does not yet hold, as
/// the disk shows it; a file admitted ahead reserves what its `.part` held when admitted.
final class StorageBudgetTests: XCTestCase {
    func testRunningFilesAreLookedAtAndFilesAdmittedAheadCountWhatAdmissionFound() async throws {
        let dir = try TestDirectory(prefix: "csb")
        let store = MediaFolder(stateDirectory: dir.stateDir)
        try store.prepare()
        let budget = StorageBudget(files: FileStore(catalog: try StateDB(stateDirectory: dir.stateDir)), store: store)
        let blockSize = try XCTUnwrap(StorageBudget.fileSystemSpace(store.root)).blockSize

        // A running file of 4 blocks whose `.part` holds one: three blocks still to write.
        let running = FileJob(fileId: 1, url: "/media/a", relative: "tracks/a.mp3", sizeBytes: 4 * blockSize, sha256: nil)
        try Data(count: Int(blockSize)).write(to: URL(fileURLWithPath: try store.partPath(running.relative)))
        // Admitted ahead: one found with two blocks of its 4, one nobody looked at (whole size).
        // Neither has a `.part` on disk, so what is reserved for them is what admission said.
        let looked = FileJob(fileId: 2, url: "/media/b", relative: "tracks/b.mp3", sizeBytes: 4 * blockSize, sha256: nil)
            .withPart(2 * blockSize)
        let unseen = FileJob(fileId: 3, url: "/media/c", relative: "tracks/c.mp3", sizeBytes: 4 * blockSize, sha256: nil)

        let (room, reservations, _) = await budget.room(
            policy: DownloadPolicy(), running: [running], ahead: [looked, unseen].map(StorageBudget.AdmittedAhead.init),
            looking: [], countCache: false)
        XCTAssertEqual(reservations[1]?.disk, 3 * blockSize)
        XCTAssertEqual(reservations[2]?.disk, 2 * blockSize)
        XCTAssertEqual(reservations[3]?.disk, 4 * blockSize)
        XCTAssertEqual(room.reservedBytes, 9 * blockSize)
        XCTAssertEqual(room.cacheReservedBytes, 12 * blockSize, "each file counts whole against the cache")
    }
}
