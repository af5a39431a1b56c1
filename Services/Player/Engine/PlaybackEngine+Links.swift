import Wire

/// What the engine shares with the player's other parts: the streaming privilege (held while a
/// stream is heard), and the downloader (the network type, for the streaming quality).
extension PlaybackEngine {
    /// Tells the privilege keeper whether a stream plays: an active product that is streamed and
    /// not paused holds a session, an offline one or none releases it; unknown while resolving.
    func syncPrivilege() {
        guard let privilege else { return }
        guard let current = active else { return privilege.setStreaming(false) }
        guard let context = current.context else { return }
        // Held while a stream is wanted to be heard: a pause (a revocation's included) lets it go,
        // and `play` takes it again.
        privilege.setStreaming(!context.track.offline && wantPlaying)
    }

    /// Another device took the streaming privilege: a stream pauses (an offline product plays on).
    func privilegeRevoked(otherDevice: String) {
        guard let current = active, current.context?.track.offline == false else { return }
        pause()
        events.publish(.streamingPrivilegesRevoked(otherDevice: otherDevice, product: current.product))
    }

    /// The quality to ask a stream in: the cellular one while the downloader sees a cellular link.
    func streamingQuality(_ config: PlayerConfig) async -> String {
        guard let downloader else { return config.streamingQualityWifi }
        return await downloader.isCellular() ? config.streamingQualityCellular : config.streamingQualityWifi
    }
}
