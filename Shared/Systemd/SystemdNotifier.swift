import CSystemd
import Foundation

/// Talks to the service manager through `NOTIFY_SOCKET` (sd_notify(3)). Every call is a
/// no-op when the variable is absent, so a service started by hand behaves the same.
///
/// Calls come from the cooperative pool and event loops, so a send never waits: when the
/// manager's queue is full the message is dropped (a STATUS= or WATCHDOG=1 is sent again soon).
public struct SystemdNotifier: Sendable {
    public init() {}

    public var isEnabled: Bool { ProcessInfo.processInfo.environment["NOTIFY_SOCKET"] != nil }

    /// Sent once the listening socket accepts connections and not later: heavy start-up work
    /// (a catalog scan, an origin sync) happens after, so activation never waits on it.
    public func ready(status: String? = nil) { send("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? "") + "\nMAINPID=\(getpid())") }
    public func stopping() { send("STOPPING=1") }
    public func watchdog() { send("WATCHDOG=1") }
    public func status(_ text: String) { send("STATUS=\(text)") }

    private func send(_ state: String) {
        guard isEnabled else { return }
        _ = cassette_sd_notify_nowait(state)
    }
}
