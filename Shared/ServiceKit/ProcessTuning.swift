import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Thread counts and allocator settings of a daemon, applied first thing in `Daemon.run`,
/// before anything starts a thread. docs/architecture.md ("Threads and memory") gives the
/// reasons and the measurements behind each figure. An operator can still override each
/// one through its environment variable, which then wins.
enum ProcessTuning {
    /// SwiftNIO's event loops: one carries every connection of a daemon.
    static let eventLoops = 1
    /// NIO's blocking pool (`BlockingIO.run`): short file, `statvfs`, D-Bus and catalog-open calls.
    static let blockingThreads = 2
    /// glibc malloc arenas. Each thread that allocates while another holds the arena's lock gets
    /// an arena of its own (up to eight per core), and freed memory stays in the arena that held it.
    static let mallocArenas: Int32 = 2

    static func apply(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil {
            NIOSingletons.groupLoopCountSuggestion = eventLoops
        }
        if environment["NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT"] == nil {
            NIOSingletons.blockingPoolThreadCountSuggestion = blockingThreads
        }
        if environment["MALLOC_ARENA_MAX"] == nil {
            setMallocArenaMax(mallocArenas)
        }
    }
}

/// `mallopt(M_ARENA_MAX, n)`: <malloc.h> is not part of Swift's Glibc module, so the function
/// is looked up by name (it is part of glibc's stable ABI); nothing happens on a libc without it.
private func setMallocArenaMax(_ arenas: Int32) {
    #if canImport(Glibc)
    typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    let mArenaMax: Int32 = -8
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
    _ = unsafeBitCast(symbol, to: Mallopt.self)(mArenaMax, arenas)
    #endif
}
