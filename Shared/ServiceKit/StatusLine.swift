import NIOConcurrencyHelpers
import ServiceLifecycle
import Systemd

/// Keeps the one-line `STATUS=` that `systemctl status` shows current ("3 downloads active,
/// 41 %", "playing st-9 (Focus No. 1)", "idle, 0 queued"). The line is asked of the service
/// about once per `interval` and sent only when it changed, so a busy service costs the manager
/// at most one datagram a second however often its state moves. Runs only under a manager
/// that listens (`NOTIFY_SOCKET` set), from READY=1 until the stop.
struct StatusLine: Service {
    static let interval: Duration = .seconds(1)

    let notifier: SystemdNotifier
    let ready: ReadyGate
    let text: @Sendable () async -> String

    func run() async throws {
        await cancelWhenGracefulShutdown { await ready.wait() }
        var sent = "listening"
        // A line that waits (on the catalog, still opening) is waited for again next round,
        // never asked twice at once, and never holds up the stop by more than one interval.
        var asking: Task<String, Never>?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let question = asking ?? Task { await text() }
            asking = question
            if let line = await Self.answer(question, within: Self.interval) {
                asking = nil
                if line != sent, !Task.isShuttingDownGracefully {
                    notifier.status(line)
                    sent = line
                }
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: Self.interval) }
        }
        asking?.cancel()
    }

    /// The task's value, or nil when it took longer than `limit` (it keeps running).
    private static func answer(_ task: Task<String, Never>, within limit: Duration) async -> String? {
        let pending = NIOLockedValueBox<CheckedContinuation<String?, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            pending.withLockedValue { $0 = continuation }
            @Sendable func finish(_ value: String?) {
                pending.withLockedValue { waiting in
                    waiting?.resume(returning: value)
                    waiting = nil
                }
            }
            Task { finish(await task.value) }
            Task {
                try? await Task.sleep(for: limit)
                finish(nil)
            }
        }
    }
}
