import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Stops accepting for a while when `accept` fails for want of file descriptors (or kernel
/// memory), logs that once, and accepts again by itself once descriptors are free. Clients
/// that connect meanwhile wait in the listen backlog; nobody is dropped.
///
/// It runs next to NIO's `AcceptBackoffHandler`, which decides when to try again. That
/// handler alone does not stop the loop from spinning: it only delays the next `read()`,
/// and when the first `accept` of a wake-up fails, NIO's server channel keeps its read
/// pending and never asks for another. The listening socket then stays in the
/// level-triggered epoll set with connections waiting in its backlog, so the loop wakes,
/// fails `accept` with `EMFILE` and wakes again, at a whole core, with nothing logged
/// (NIO's own async bootstraps install `AcceptBackoffHandler` and spin the same way).
/// Turning `autoRead` off is the one public way to take the socket out of the epoll set,
/// so on such an error this handler turns it off and hands a read to the backoff handler;
/// when the backoff lets that read through, `autoRead` goes back on and accepting resumes.
final class AcceptThrottle: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Channel
    typealias InboundOut = Channel
    typealias OutboundIn = Channel

    /// How long accepting pauses before the next attempt.
    static let backoff = TimeAmount.milliseconds(250)
    /// A new warning within this long of the last one is logged at debug only, so a service
    /// hovering at its limit (one client leaves, the next arrives) cannot flood the log.
    static let warningInterval = TimeAmount.minutes(10)

    private let logger: Logger
    private let connectionCount: @Sendable () -> Int
    private var paused = false
    /// Since when accepting has been failing; nil while it works.
    private var failingSince: NIODeadline?
    private var warnedThisTime = false
    private var lastWarning: NIODeadline?

    init(logger: Logger, connectionCount: @escaping @Sendable () -> Int) {
        self.logger = logger
        self.connectionCount = connectionCount
    }

    /// The handlers for a server channel, in pipeline order: this one, then NIO's backoff.
    static func handlers(logger: Logger, connectionCount: @escaping @Sendable () -> Int) -> [ChannelHandler] {
        [
            AcceptThrottle(logger: logger, connectionCount: connectionCount),
            AcceptBackoffHandler(shouldForwardIOErrorCaught: false) { error in
                Exhaustion(error) == nil ? nil : backoff
            },
        ]
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let exhaustion = (error as? IOError).flatMap(Exhaustion.init) else {
            context.fireErrorCaught(error)
            return
        }
        report(exhaustion)
        // The backoff handler behind us sets its deadline from this error.
        context.fireErrorCaught(error)
        guard !paused else { return }
        paused = true
        try? context.channel.syncOptions?.setOption(.autoRead, value: false)
        // Enters the pipeline at its tail so it passes the backoff handler, which holds it
        // until the backoff has elapsed and then lets it through to `read` below.
        context.pipeline.syncOperations.read()
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            paused = false
            try? context.channel.syncOptions?.setOption(.autoRead, value: true)
        }
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let since = failingSince {
            failingSince = nil
            if warnedThisTime {
                logger.notice(
                    "accepting connections again",
                    metadata: [
                        "pausedSeconds": "\(Double((NIODeadline.now() - since).nanoseconds) / 1e9)"
                    ])
            }
            warnedThisTime = false
        }
        context.fireChannelRead(data)
    }

    private func report(_ exhaustion: Exhaustion) {
        guard failingSince == nil else { return }
        let now = NIODeadline.now()
        failingSince = now
        let metadata: Logger.Metadata = [
            "error": "\(exhaustion.errnoName)",
            "limit": "\(Self.descriptorLimit)",
            "connections": "\(connectionCount())",
            "retryEvery": "\(Self.backoff)",
        ]
        if let last = lastWarning, now - last < Self.warningInterval {
            logger.debug("accept paused again: \(exhaustion.reason)", metadata: metadata)
            return
        }
        lastWarning = now
        warnedThisTime = true
        logger.warning("\(exhaustion.reason): accepting no new connections until some close", metadata: metadata)
    }

    /// The soft RLIMIT_NOFILE, "soft/hard" when they differ, as the log should name it.
    private static var descriptorLimit: String {
        var limit = rlimit()
        #if canImport(Glibc)
            guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return "unknown" }
        #else
            guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return "unknown" }
        #endif
        return limit.rlim_cur == limit.rlim_max ? "\(limit.rlim_cur)" : "\(limit.rlim_cur)/\(limit.rlim_max)"
    }

    /// The `accept` failures that go away only when something else is released.
    /// (`ECONNABORTED` concerns one connection; the next `accept` succeeds, so no pause.)
    enum Exhaustion: Equatable {
        case processDescriptors, systemDescriptors, memory(Int32)

        init?(_ error: IOError) {
            switch error.errnoCode {
            case EMFILE: self = .processDescriptors
            case ENFILE: self = .systemDescriptors
            case ENOBUFS, ENOMEM: self = .memory(error.errnoCode)
            default: return nil
            }
        }

        var errnoName: String {
            switch self {
            case .processDescriptors: "EMFILE"
            case .systemDescriptors: "ENFILE"
            case .memory(let code): code == ENOBUFS ? "ENOBUFS" : "ENOMEM"
            }
        }

        var reason: String {
            switch self {
            case .processDescriptors: "out of file descriptors (the process reached its limit)"
            case .systemDescriptors: "out of file descriptors (the system-wide table is full)"
            case .memory: "out of kernel memory for new connections"
            }
        }
    }
}
