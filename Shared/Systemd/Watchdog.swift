import CSystemd
import Foundation
import Logging
import ServiceLifecycle

/// Pings the systemd watchdog at half of `WATCHDOG_USEC`, but only while `isHealthy` says
/// so: a service whose event loop is wedged stops pinging and gets restarted.
public struct WatchdogService: Service {
    private let interval: Duration
    private let isHealthy: @Sendable () async -> Bool
    private let ready: @Sendable () async -> Void
    private let notifier: SystemdNotifier
    private let logger: Logger

    /// nil when the manager asked for no watchdog (or asked another PID).
    /// - Parameter ready: returns once READY=1 was sent; no ping goes out before it.
    public init?(
        notifier: SystemdNotifier = SystemdNotifier(), logger: Logger,
        after ready: @escaping @Sendable () async -> Void = {},
        isHealthy: @escaping @Sendable () async -> Bool
    ) {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        self.interval = .microseconds(Int64(usec / 2))
        self.isHealthy = isHealthy
        self.ready = ready
        self.notifier = notifier
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await ready() }
        guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
        logger.info("watchdog enabled", metadata: ["interval": "\(interval)"])
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if await isHealthy() {
                notifier.watchdog()
            } else {
                logger.warning("health check failed; withholding the watchdog ping")
            }
            // Woken by SIGTERM too, so the watchdog never delays STOPPING=1 and the exit.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
