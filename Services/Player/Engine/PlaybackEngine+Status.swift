import Wire

extension PlaybackEngine {
    /// Seconds into the active product of the frame being heard: frames the device has played
    /// (written minus its delay), moved on with the clock between the output thread's updates.
    var assetPosition: Double? {
        guard let current = active else { return nil }
        let snapshot = pipe.position
        guard snapshot.token == current.token else { return current.startPosition }
        return snapshot.position()
    }

    /// The `STATUS=` line (see ServiceKit's `StatusLine`): "playing st-9 (Focus No. 1)" on a
    /// station, "playing <product id>" otherwise, "buffering …" while stalled, "paused", "stopped".
    var statusLine: String {
        let what = station.cursor.map { "\($0.id) (\($0.name))" } ?? active?.product.productId ?? ""
        switch state {
        case .playing: return "playing \(what)"
        case .stalled: return outputTrouble == nil ? "buffering \(what)" : "no audio device: \(what)"
        case .notPlaying: return active == nil ? "stopped" : "paused"
        case .idle: return "stopped"
        }
    }

    func status() async -> JSONValue {
        let config = await currentConfig()
        var fields: [String: JSONValue] = [
            "playbackState": .string(state.rawValue),
            "mediaProduct": active?.product.json ?? .null,
            "playbackContext": active?.context?.json ?? .null,
            "assetPosition": assetPosition.map { .number(($0 * 1000).rounded() / 1000) } ?? .null,
            "nextMediaProduct": next?.product.json ?? .null,
            "activeStation": station.json,
            "offlineMode": .bool(config.offlineMode),
            "availability": .string(availability.rawValue),
            "startLatencyMs": lastStartLatency.map { .number(Self.milliseconds($0)) } ?? .null,
            "output": pipeline.outputHealth.json,
        ]
        fields.merge(TrackInfo.displayFields(of: active?.context?.track)) { current, _ in current }
        return .object(fields)
    }

    static func milliseconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return ((Double(s) * 1000 + Double(atto) * 1e-15) * 1000).rounded() / 1000
    }

    func configGet() async -> PlayerConfig { await currentConfig() }

    func currentConfig() async -> PlayerConfig {
        // Re-checked after the awaits: a concurrent load or a player.config.set may have won.
        if !configLoaded, let catalog = try? await catalog(), let loaded = try? await PlayerConfig.load(from: catalog), !configLoaded {
            config = loaded
            configLoaded = true
            pipe.loudnessSettings = LoudnessSettings(loaded)
        }
        return config
    }

    /// At start: the downloader hears the offline mode the player has (a change it missed while
    /// it was not running included). Nothing happens when it does not answer.
    func tellDownloaderOfflineMode() async {
        let config = await currentConfig()
        await downloader?.setOfflineMode(config.offlineMode)
    }

    func configSet(_ update: PlayerConfig.Update) async throws -> PlayerConfig {
        let previous = await currentConfig()
        let updated = try previous.applying(update)
        // Straight to the output thread, before the (fsynced) save: a mode change is heard
        // within the device buffer (see OutputSettings); undone if it cannot be persisted.
        pipe.loudnessSettings = LoudnessSettings(updated)
        do {
            let catalog = try await catalog()
            try await updated.save(to: catalog)
        } catch {
            pipe.loudnessSettings = LoudnessSettings(previous)
            throw error
        }
        config = updated
        configLoaded = true
        if updated.offlineMode != previous.offlineMode {
            // Answered whatever the downloader says: the player's own offline mode is in force.
            await downloader?.setOfflineMode(updated.offlineMode)
            if origin != nil { Task { await self.checkAvailability() } }
        }
        return updated
    }
}
