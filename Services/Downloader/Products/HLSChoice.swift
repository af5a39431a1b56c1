import HLS
import Wire

/// Which variant and renditions of an HLS presentation `offline.add` downloads (Brightcove):
/// the variant whose `BANDWIDTH` is closest at or below the requested `bitrate` (the lowest
/// variant when every one is above it); without a bitrate, the lowest variant that has video.
/// Audio and subtitle renditions of the variant's groups by language; without languages, the
/// group's default rendition only.
struct HLSChoice: Sendable, Equatable {
    var variant: HLSVariant
    var audio: [HLSRendition]
    var subtitles: [HLSRendition]

    /// Throws `LanguageNotOffered` (1008) naming the field and the languages offered when a
    /// language is not offered.
    static func choose(
        _ master: HLSMasterPlaylist, bitrate: Int?, audioLanguages: [String]?,
        subtitleLanguages: [String]?
    ) throws -> HLSChoice {
        let byBandwidth = master.variants.sorted { $0.bandwidth < $1.bandwidth }
        let variant: HLSVariant
        if let bitrate {
            variant = byBandwidth.last { $0.bandwidth <= bitrate } ?? byBandwidth[0]
        } else {
            variant = byBandwidth.first(where: \.hasVideo) ?? byBandwidth[0]
        }
        func pick(_ type: HLSRendition.MediaType, _ group: String?, _ languages: [String]?, field: String) throws -> [HLSRendition] {
            let offered = group.map { master.renditions(type, group: $0) } ?? []
            guard let languages else { return Array((offered.first(where: \.isDefault) ?? offered.first).map { [$0] } ?? []) }
            var chosen: [HLSRendition] = []
            for wanted in languages {
                guard let match = offered.first(where: { Self.sameLanguage($0.language, wanted) }) else {
                    throw DownloaderError.languageNotOffered(
                        field: field, wanted: wanted, type: type.rawValue.lowercased(),
                        offered: offered.compactMap(\.language), bandwidth: variant.bandwidth)
                }
                // `en` and `en-GB` asked together, or a language asked twice: one rendition once.
                if !chosen.contains(match) { chosen.append(match) }
            }
            return chosen
        }
        return HLSChoice(
            variant: variant,
            audio: try pick(.audio, variant.audioGroup, audioLanguages, field: "audioLanguages"),
            subtitles: try pick(.subtitles, variant.subtitlesGroup, subtitleLanguages, field: "subtitleLanguages"))
    }

    /// `fr` matches `fr` and `fr-CA`, case aside (RFC 5646 primary subtags).
    static func sameLanguage(_ offered: String?, _ wanted: String) -> Bool {
        guard let offered else { return false }
        let a = offered.lowercased(), b = wanted.lowercased()
        return a == b || a.hasPrefix(b + "-")
    }

    /// What `offline.status` shows of the choice (also kept in `offlineProducts.options`).
    var json: JSONValue {
        var variantFields: [String: JSONValue] = [
            "bandwidth": .number(Double(variant.bandwidth)),
            "codecs": .string(variant.codecs.joined(separator: ",")),
            "hasVideo": .bool(variant.hasVideo),
        ]
        if let resolution = variant.resolution { variantFields["resolution"] = .string(resolution.description) }
        return [
            "variant": .object(variantFields),
            "audioLanguages": .array(audio.compactMap(\.language).map(JSONValue.string)),
            "subtitleLanguages": .array(subtitles.compactMap(\.language).map(JSONValue.string)),
        ]
    }

    /// `offline.variants`: what a master playlist offers.
    static func offer(_ master: HLSMasterPlaylist) -> JSONValue {
        let variants: [JSONValue] = master.variants.map { variant in
            var fields: [String: JSONValue] = [
                "bandwidth": .number(Double(variant.bandwidth)),
                "codecs": .string(variant.codecs.joined(separator: ",")),
                "hasVideo": .bool(variant.hasVideo),
            ]
            if let resolution = variant.resolution { fields["resolution"] = .string(resolution.description) }
            return .object(fields)
        }
        let renditions: [JSONValue] = master.renditions.filter { $0.type == .audio || $0.type == .subtitles }.map { rendition in
            [
                "type": .string(rendition.type.rawValue), "language": rendition.language.map(JSONValue.string) ?? .null,
                "name": .string(rendition.name), "default": .bool(rendition.isDefault),
            ]
        }
        return ["variants": .array(variants), "renditions": .array(renditions)]
    }
}
