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

    static func apply(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil {
            NIOSingletons.groupLoopCountSuggestion = eventLoops
        }
        if environment["NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT"] == nil {
            NIOSingletons.blockingPoolThreadCountSuggestion = blockingThreads
        }
    }
}
