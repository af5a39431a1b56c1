import Catalog
import Foundation
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

    /// A partial update as `player.config.set` takes it: only the fields present change.
    struct Update: Decodable, Sendable {
        var loudnessNormalizationMode: LoudnessMode?
        var loudnessNormalizationPreAmp: Double?
        var streamingQualityWifi: String?
        var streamingQualityCellular: String?
        var offlineMode: Bool?
    }

    /// Applies `update`, refusing values out of range with the field named.
    func applying(_ update: Update) throws(PlayerError) -> PlayerConfig {
        var config = self
        if let mode = update.loudnessNormalizationMode { config.loudnessNormalizationMode = mode }
        if let preAmp = update.loudnessNormalizationPreAmp {
            guard preAmp.isFinite, (-20...20).contains(preAmp) else {
                throw PlayerError(.invalidConfig, "loudnessNormalizationPreAmp must be a number of dB between -20 and 20.")
            }
            config.loudnessNormalizationPreAmp = preAmp
        }
        for (field, value) in [("streamingQualityWifi", update.streamingQualityWifi),
                               ("streamingQualityCellular", update.streamingQualityCellular)] {
            guard let value else { continue }
            guard Self.qualities.contains(value) else {
                throw PlayerError(.invalidConfig, "\(field) must be one of \(Self.qualities.sorted().joined(separator: ", ")).")
            }
            if field == "streamingQualityWifi" { config.streamingQualityWifi = value } else { config.streamingQualityCellular = value }
        }
        if let offline = update.offlineMode { config.offlineMode = offline }
        return config
    }

    var json: JSONValue { (try? JSONCoding.value(self)) ?? .null }

    static func load(from catalog: Catalog) async throws -> PlayerConfig {
        guard let text = try await SettingsStore(catalog: catalog).text(forKey: settingsKey),
              let value = try? JSONCoding.parse(Array(text.utf8)),
              let stored = try? JSONCoding.decode(Stored.self, from: value)
        else { return PlayerConfig() }
        return PlayerConfig().merging(stored)
    }

    func save(to catalog: Catalog) async throws {
        try await SettingsStore(catalog: catalog).set(String(decoding: JSONCoding.data(json), as: UTF8.self), forKey: Self.settingsKey)
    }

    /// What is on disk, field by field optional, so a key added later keeps its default.
    private typealias Stored = Update

    private func merging(_ stored: Stored) -> PlayerConfig {
        (try? applying(stored)) ?? self
    }
}
