import BlockingIO
import Foundation
import Logging
import Systemd

/// Online or not, and over what: the first source that answers wins — an explicit override
/// (`network.set`), NetworkManager over D-Bus where it runs, the kernel's default route. The
/// sources are polled every `pollSeconds` (1 s: a change is seen well within 5 s, by the
/// downloader's "network monitor" service); every
/// change is published as `NetworkChanged` on topic `network` and handed to `onChange`.
/// When a source cannot look at all (see `NetworkSource`), the state stays as it was and the
/// reason is logged once, until a source answers again.
actor NetworkMonitor {
    private let sources: [any NetworkSource]
    private let events: DownloaderEvents
    private let logger: Logger
    let pollSeconds: Double
    private var overrideState: NetworkState?
    private(set) var state: NetworkState
    private var listeners: [@Sendable (NetworkState) async -> Void] = []
    /// Why the last detection could not tell, while it cannot; logged once per spell.
    private var blindness: NetworkSourceError?

    /// Asks the sources once before returning, so the first state is the real one.
    init(sources: [any NetworkSource], events: DownloaderEvents, logger: Logger, pollSeconds: Double = 1) async {
        self.sources = sources
        self.events = events
        self.logger = logger
        self.pollSeconds = pollSeconds
        switch await Self.detect(sources) {
        case .success(let detected): state = detected
        case .failure(let error):
            state = .offline
            blindness = error
            logger.warning("network state unknown at start; assuming no network", metadata: ["reason": "\(error)"])
        }
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
            switch await Self.detect(sources) {
            case .success(let detected):
                if blindness != nil {
                    blindness = nil
                    logger.notice("network state readable again")
                }
                // An override set while the sources were asked wins.
                next = self.overrideState ?? detected
            case .failure(let error):
                if blindness == nil {
                    logger.warning(
                        "network state unknown; keeping the last one",
                        metadata: [
                            "reason": "\(error)", "kept": "\(state.type.rawValue)",
                        ])
                }
                blindness = error
                next = self.overrideState ?? state
            }
        }
        guard next != state else { return state }
        let previous = state
        state = next
        logger.notice(
            "network changed",
            metadata: LogMessageID.networkChanged.metadata([
                "from": "\(previous.type.rawValue)", "to": "\(next.type.rawValue)", "interface": "\(next.interface ?? "-")",
                "metered": "\(next.metered)", "source": "\(next.source)",
            ]))
        var data = next.json
        data["previousType"] = .string(previous.type.rawValue)
        events.publish(.networkChanged(data))
        for listener in listeners { await listener(next) }
        return next
    }

    /// D-Bus calls and `/proc` reads block: they run off the cooperative pool. The first
    /// source with an answer wins; one that cannot look stops the round (a later source must
    /// not decide for a blind one), and no answer at all is no network.
    private static func detect(_ sources: [any NetworkSource]) async -> Result<NetworkState, NetworkSourceError> {
        await BlockingIO.run {
            for source in sources {
                do {
                    if let answer = try source.read() { return .success(answer) }
                } catch let error as NetworkSourceError {
                    return .failure(error)
                } catch {
                    return .failure(NetworkSourceError(source: source.name, reason: "\(error)"))
                }
            }
            return .success(.offline)
        }
    }
}
