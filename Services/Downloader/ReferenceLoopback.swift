import Synchronization

/// The app's `referenceId` of each offline token (TIDAL: every offline message loops back the
/// `referenceId` of the media product requested for offlining). `DownloaderEvents` adds it to
/// every `downloads` event that names the token, whichever part of the downloader sends it.
/// Filled from the catalog at start and by `offline.add`, so it survives restarts.
final class ReferenceLoopback: Sendable {
    private let byToken = Mutex<[String: String]>([:])

    init() {}

    func load(_ all: [String: String]) {
        byToken.withLock { $0.merge(all) { _, new in new } }
    }

    func set(_ referenceId: String?, token: String) {
        guard let referenceId else { return }
        byToken.withLock { $0[token] = referenceId }
    }

    func referenceId(token: String) -> String? {
        byToken.withLock { $0[token] }
    }
}
