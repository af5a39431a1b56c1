import BlockingIO
import Foundation
import Logging
import Systemd

/// Online or not, and over what: the first source that answers wins — an explicit override
/// (`network.set`), NetworkManager over D-Bus where it runs, the kernel's default route. The
/// sources are polled every `pollSeconds` (1 s: a change is seen well within 5 s, by the
/// downloader's "network monitor" service); every
/// change is published as `NetworkChanged` on topic `network` and handed to `onChange`.
actor NetworkMonitor {
    private let sources: [any NetworkSource]
    private let events: DownloaderEvents
    private let logger: Logger
    let pollSeconds: Double
    private var overrideState: NetworkState?
    private(set) var state: NetworkState
    private var listeners: [@Sendable (NetworkState) async -> Void] = []

    /// Asks the sources once before returning, so the first state is the real one.
    init(sources: [any NetworkSource], events: DownloaderEvents, logger: Logger, pollSeconds: Double = 1) async {
        self.sources = sources
        self.events = events
        self.logger = logger
        self.pollSeconds = pollSeconds
        state = await Self.detect(sources)
    }

    var isOverridden: Bool { overrideState != nil }

    func onChange(_ listener: @escaping @Sendable (NetworkState) async -> Void) {
        listeners.append(listener)
    }

    /// Sets (or with nil clears) the override and applies the result at once.
    @discardableResult
    func setOverride(_ override: NetworkState?) async -> NetworkState {
        overrideState = override
        return await refresh()
    }

    /// Asks the sources now; publishes and notifies when the answer differs from the last.
    @discardableResult
    func refresh() async -> NetworkState {
        var next: NetworkState
        if let overrideState {
            next = overrideState
        } else {
            let detected = await Self.detect(sources)
            // An override set while the sources were asked wins.
            next = self.overrideState ?? detected
        }
        guard next != state else { return state }
        let previous = state
        state = next
        logger.notice("network changed", metadata: LogMessageID.networkChanged.metadata([
            "from": "\(previous.type.rawValue)", "to": "\(next.type.rawValue)", "interface": "\(next.interface ?? "-")",
            "metered": "\(next.metered)", "source": "\(next.source)"]))
        var data = next.json
        data["previousType"] = .string(previous.type.rawValue)
        events.network("NetworkChanged", data)
        for listener in listeners { await listener(next) }
        return next
    }

    /// D-Bus calls and `/proc` reads block: they run off the cooperative pool.
    private static func detect(_ sources: [any NetworkSource]) async -> NetworkState {
        await BlockingIO.run {
            for source in sources {
                if let answer = source.read() { return answer }
            }
            return .offline
        }
    }
}
