import CMalloc
import Foundation
import NIOCore

/// Thread counts of a daemon, applied first thing in `Daemon.run`, before anything starts a
/// thread. docs/architecture.md ("Threads") gives the reasons and the measurements behind each
/// figure. An operator can still override each through its environment variable, which wins.
enum ProcessTuning {
    /// SwiftNIO's event loops: one accepts, one carries every connection and runs their requests
    /// (`RPCServer.split`).
    static let eventLoops = 2
    /// NIO's blocking pool (`BlockingIO.run`): short file, `statvfs`, D-Bus and catalog-open calls.
    static let blockingThreads = 2
    /// glibc's malloc arenas. By default a thread that finds the arenas busy gets one of its own
    /// (up to eight per core), and each arena keeps what was freed in it: a downloader syncing
    /// 1 000 files on 35 threads peaked 5 MiB higher with the default, at the same speed.
    static let mallocArenas: Int32 = 2

    static func apply(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil {
            NIOSingletons.groupLoopCountSuggestion = eventLoops
        }
        if environment["NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT"] == nil {
            NIOSingletons.blockingPoolThreadCountSuggestion = blockingThreads
        }
        if environment["MALLOC_ARENA_MAX"] == nil {
            _ = mallopt(M_ARENA_MAX, mallocArenas)
        }
    }
}
