import Wire

/// Audio and subtitle renditions asked for a presentation already held (Brightcove "Downloading
/// Secondary Tracks"): the choice to plan it again with, which is the held variant (the bitrate
/// asked for then, or the default) and the held languages followed by those asked for that no
/// held language covers. A language the product does not offer is refused when the choice is
/// planned (`HLSChoice`: `LanguageNotOffered`).
struct SecondaryTracks: Sendable {
    var choice: OfflineProducts.PresentationChoice
    /// For messages: "audio fr and subtitles de".
    var what: String

    /// nil when the request names no language the product lacks (it is the same request again).
    /// A request that names a variant of its own (`bitrate`) is refused: a token holds one variant.
    init?(asked: OfflineProducts.PresentationChoice, held: ProductStore.Held, productId: String) throws {
        guard asked.audioLanguages != nil || asked.subtitleLanguages != nil else { return nil }
        guard held.manifestType == "hls" else {
            throw RPCError.invalidParams("params.\(asked.firstField ?? "audioLanguages") applies to HLS products only; \(productId) is one progressive file.")
        }
        func languages(_ key: String) -> [String] { held.options[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        func merged(_ key: String, _ wanted: [String]?) -> (all: [String], new: [String]) {
            let have = languages(key)
            let new = (wanted ?? []).filter { language in !have.contains { HLSChoice.sameLanguage($0, language) } }
            return (have + new, new)
        }
        let audio = merged("audioLanguages", asked.audioLanguages)
        let subtitles = merged("subtitleLanguages", asked.subtitleLanguages)
        guard !audio.new.isEmpty || !subtitles.new.isEmpty else { return nil }
        if asked.bitrate != nil, held.options["bitrate"]?.intValue != asked.bitrate {
            throw RPCError.invalidParams("params.bitrate: \(productId) is offlined at one variant; renditions are added to it without a bitrate.")
        }
        choice = OfflineProducts.PresentationChoice(
            bitrate: held.options["bitrate"]?.intValue, audioLanguages: audio.all,
            subtitleLanguages: subtitles.all)
        what = [
            audio.new.isEmpty ? nil : "audio " + audio.new.joined(separator: ", "),
            subtitles.new.isEmpty ? nil : "subtitles " + subtitles.new.joined(separator: ", "),
        ]
        .compactMap { $0 }.joined(separator: " and ")
    }
}
