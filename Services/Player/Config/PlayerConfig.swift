import Foundation
import StateDB
import Wire

/// TIDAL's persisted PlaybackEngine config plus the app's offline mode, kept in the catalog's
/// `settings` table under `player.config` so it survives restarts.
struct PlayerConfig: Codable, Sendable, Equatable {
    enum LoudnessMode: String, Codable, Sendable, CaseIterable { case off = "OFF", track = "TRACK", album = "ALBUM" }

    var loudnessNormalizationMode: LoudnessMode = .off
    /// dB; TIDAL: 4 in general, 0 on TV boxes and AirPlay.
    var loudnessNormalizationPreAmp: Double = 4
    var streamingQualityWifi: String = "LOSSLESS"
    var streamingQualityCellular: String = "HIGH"
    var offlineMode: Bool = false

    static let settingsKey = "player.config"
    static let qualities: Set<String> = ["LOW", "HIGH", "LOSSLESS", "HI_RES", "HI_RES_LOSSLESS"]

    /// A partial update as `player.config.set` takes it: only the fields present change. Values
    /// are read as JSON so that a value of the wrong type is `InvalidConfig` naming the field, as
    /// an out-of-range one is; a key not named here is refused (-32602) by `ClosedParams`.
    struct Update: ClosedParams, Sendable {
        var loudnessNormalizationMode: JSONValue?
        var loudnessNormalizationPreAmp: JSONValue?
        var streamingQualityWifi: JSONValue?
        var streamingQualityCellular: JSONValue?
        var offlineMode: JSONValue?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case loudnessNormalizationMode, loudnessNormalizationPreAmp, streamingQualityWifi, streamingQualityCellular, offlineMode
        }
    }

    /// Applies `update`, refusing values of the wrong type or out of range with the field named.
    func applying(_ update: Update) throws(PlayerError) -> PlayerConfig {
        var config = self
        if let value = present(update.loudnessNormalizationMode) {
            guard let mode = value.stringValue.flatMap(LoudnessMode.init(rawValue:)) else {
                throw PlayerError(.invalidConfig, "loudnessNormalizationMode must be one of OFF, TRACK, ALBUM; got \(Self.shown(value)).")
            }
            config.loudnessNormalizationMode = mode
        }
        if let value = present(update.loudnessNormalizationPreAmp) {
            guard let preAmp = value.doubleValue, preAmp.isFinite, (-20...20).contains(preAmp) else {
                throw PlayerError(.invalidConfig, "loudnessNormalizationPreAmp must be a number of dB between -20 and 20; got \(Self.shown(value)).")
            }
            config.loudnessNormalizationPreAmp = preAmp
        }
        for (field, value) in [
            ("streamingQualityWifi", update.streamingQualityWifi),
            ("streamingQualityCellular", update.streamingQualityCellular),
        ] {
            guard let value = present(value) else { continue }
            guard let quality = value.stringValue, Self.qualities.contains(quality) else {
                throw PlayerError(.invalidConfig, "\(field) must be one of \(Self.qualities.sorted().joined(separator: ", ")); got \(Self.shown(value)).")
            }
            if field == "streamingQualityWifi" { config.streamingQualityWifi = quality } else { config.streamingQualityCellular = quality }
        }
        if let value = present(update.offlineMode) {
            guard let offline = value.boolValue else {
                throw PlayerError(.invalidConfig, "offlineMode must be true or false; got \(Self.shown(value)).")
            }
            config.offlineMode = offline
        }
        return config
    }

    /// A value as the caller wrote it, cut short, for a message.
    private static func shown(_ value: JSONValue) -> String {
        String(String(decoding: value.serialized(), as: UTF8.self).prefix(64))
    }

    /// A field given with a value; `null` counts as absent (leave the setting as it is).
    private func present(_ value: JSONValue?) -> JSONValue? {
        guard let value, value != .null else { return nil }
        return value
    }

    var json: JSONValue { (try? JSONCoding.value(self)) ?? .null }

    static func load(from catalog: StateDB) async throws -> PlayerConfig {
        guard let text = try await SettingsStore(catalog: catalog).text(forKey: settingsKey),
            let value = try? JSONCoding.parse(Array(text.utf8)),
            let stored = try? JSONCoding.decode(Stored.self, from: value)
        else { return PlayerConfig() }
        return PlayerConfig().merging(stored)
    }

    func save(to catalog: StateDB) async throws {
        try await SettingsStore(catalog: catalog).set(String(decoding: JSONCoding.data(json), as: UTF8.self), forKey: Self.settingsKey)
    }

    /// What is on disk, field by field optional, so a key added later keeps its default.
    private typealias Stored = Update

    private func merging(_ stored: Stored) -> PlayerConfig {
        (try? applying(stored)) ?? self
    }
}
