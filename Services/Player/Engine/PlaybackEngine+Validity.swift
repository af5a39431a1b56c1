import Foundation

/// A product played from the device stops when its license or offline window ends, at that
/// instant, by the rule the local media server refuses it by (`PlayableWindow`).
extension PlaybackEngine {
    /// How often a watched product's validity is read again while it is the active or the next
    /// one, so that a license renewed or replaced by a shorter one, a sync that moved its window,
    /// or a trusted time that jumped is followed; between two reads the engine sleeps until the
    /// end it knows of when that comes first.
    static let validityRecheck: Duration = .seconds(1)

    /// Follows `token`'s product, resolved to the device's copy, for as long as it is the active
    /// or the next product; when its validity ends, `validityEnded`.
    func watchValidity(_ token: TrackToken, productId: String) {
        let source = source
        Task {
            while self.isActiveOrNext(token) {
                var wake = ContinuousClock.now + Self.validityRecheck
                do {
                    let window = try await source.window(productId: productId)
                    guard window.holds else {
                        self.validityEnded(token, productId: productId, endedAt: window.validity.until)
                        return
                    }
                    if let end = window.endsAt { wake = min(wake, end) }
                } catch {
                    // The catalog could not be read this time: the next look decides.
                    logger.debug("validity of \(productId) not read: \(error)")
                }
                try? await Task.sleep(until: wake, clock: .continuous)
            }
        }
    }

    private func isActiveOrNext(_ token: TrackToken) -> Bool {
        active?.token == token || next?.token == token
    }

    /// `token`'s license or offline window has ended. The active product stops where it is
    /// heard: `OfflineNotValid`, then IDLE, its play event closed at the position heard (a
    /// station ends with it: its items share the station's expiry). A next product is not
    /// played: taken out of the pipeline, its failure raised once it would become active.
    private func validityEnded(_ token: TrackToken, productId: String, endedAt: Date?) {
        let error = SourceError.offlineNotValid(productId, endedAt: endedAt)
        if active?.token == token {
            logger.info("\(productId): license or offline window ended while it was active; playback stops")
            fail(error)
        } else if next?.token == token {
            next?.failure = (error.name, error.message)
            if let current = active, current.submitted { _ = pipe.setNext(nil, after: current.token) }
        }
    }
}
