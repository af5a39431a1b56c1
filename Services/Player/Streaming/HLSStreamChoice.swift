import HLS

/// Which variant of an HLS master playlist a stream plays, from the streaming quality setting
/// (`player.config` `streamingQualityWifi`/`streamingQualityCellular`):
///
/// | quality                                  | variant                                                   |
/// |------------------------------------------|-----------------------------------------------------------|
/// | `LOW`                                    | the lowest `BANDWIDTH`                                     |
/// | `HIGH` (or none)                         | the highest lossy one (AAC, …); the lowest if all are lossless |
/// | `LOSSLESS`, `HI_RES`, `HI_RES_LOSSLESS`  | the highest lossless one (FLAC, ALAC); the highest if none is |
///
/// Only audio-only variants are considered when there are any (the player plays audio); a
/// video's variants all have video, and then all of them are.
enum HLSStreamChoice {
    static func variant(of master: HLSMasterPlaylist, quality: String?) -> HLSVariant? {
        let audioOnly = master.variants.filter { !$0.hasVideo }
        let candidates = (audioOnly.isEmpty ? master.variants : audioOnly).sorted { $0.bandwidth < $1.bandwidth }
        let lossless = candidates.filter(isLossless)
        let lossy = candidates.filter { !isLossless($0) }
        switch quality {
        case "LOW":
            return candidates.first
        case "LOSSLESS", "HI_RES", "HI_RES_LOSSLESS":
            return lossless.last ?? candidates.last
        default:
            return lossy.last ?? candidates.first
        }
    }

    /// A variant whose codecs name a lossless audio codec (RFC 6381 names: `fLaC`, `alac`).
    static func isLossless(_ variant: HLSVariant) -> Bool {
        variant.codecs.contains { ["flac", "alac"].contains($0.lowercased()) }
    }
}
