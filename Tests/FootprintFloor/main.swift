import Foundation
import GRDB
import NIOCore
import NIOPosix

// `footprint-floor DIR`: the libraries every Cassette daemon stands on, and nothing of Cassette.
//
// It imports Foundation, opens a GRDB pool in WAL mode as the daemons open the catalog (one
// write, one read), binds a SwiftNIO server on a Unix socket with one event loop, writes
// `DIR/floor.ready` and idles. `cassette-bench footprint` measures its memory beside the
// daemons' and MPD's: what a daemon holds above it is Cassette's own; what the floor holds is
// the price of the stack before any of Cassette's code runs.
guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: footprint-floor DIR\n".utf8))
    exit(64)
}
let directory = CommandLine.arguments[1]
var configuration = Configuration()
configuration.journalMode = .wal
let pool = try DatabasePool(path: directory + "/floor.sqlite", configuration: configuration)
try pool.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS floor(id INTEGER PRIMARY KEY, name TEXT)") }
_ = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM floor") }
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let server = try ServerBootstrap(group: group)
    .bind(unixDomainSocketPath: directory + "/floor.sock", cleanupExistingSocketFile: true)
    .wait()
FileManager.default.createFile(atPath: directory + "/floor.ready", contents: nil)
try server.closeFuture.wait()
