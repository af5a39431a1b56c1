import Foundation

/// The audio encodings the demo catalog spreads its tracks over, so clients meet every
/// container and codec they must handle (FLAC, MP3, AAC in MP4, Opus in Ogg).
enum AudioFormat: String, CaseIterable, Sendable {
    case flac, mp3, aac, opus

    var fileExtension: String {
        switch self {
        case .flac: "flac"
        case .mp3: "mp3"
        case .aac: "m4a"
        case .opus: "opus"
        }
    }

    var mimeType: String {
        switch self {
        case .flac: "audio/flac"
        case .mp3: "audio/mpeg"
        case .aac: "audio/mp4"
        case .opus: "audio/ogg"
        }
    }

    /// TIDAL's quality names: FLAC is LOSSLESS, the lossy high-bitrate files HIGH, Opus 96k LOW.
    var audioQuality: String {
        switch self {
        case .flac: "LOSSLESS"
        case .mp3, .aac: "HIGH"
        case .opus: "LOW"
        }
    }

    var sampleRate: Int { self == .opus ? 48_000 : 44_100 }
    var bitDepth: Int? { self == .flac ? 16 : nil }

    var encoderArguments: [String] {
        switch self {
        case .flac: ["-c:a", "flac", "-sample_fmt", "s16", "-ar", "44100"]
        case .mp3: ["-c:a", "libmp3lame", "-b:a", "320k", "-ar", "44100"]
        case .aac: ["-c:a", "aac", "-b:a", "256k", "-ar", "44100", "-movflags", "+faststart"]
        case .opus: ["-c:a", "libopus", "-b:a", "96k", "-ar", "48000"]
        }
    }
}

/// One station of the demo lineup. Offline windows differ per station so expiry tests can
/// move the clock past one station's window while another is still valid.
struct StationPlan: Sendable {
    var id: String
    var name: String
    var offline: Bool
    var onExpiry: ExpiryPolicy
    var validitySeconds: Int
    var revalidateSeconds: Int
}

/// One track to synthesise: an ffmpeg lavfi source, a filter chain and an encoding.
struct TrackPlan: Sendable {
    var id: String
    var title: String
    var album: String
    var seconds: Double
    var source: String
    var filter: String
    var format: AudioFormat

    var file: String { "media/\(id).\(format.fileExtension)" }
}

/// The fixed shape of the demo catalog; only track counts and lengths are parameters.
enum DemoLineup {
    static let artist = "Cassette Demo Ensemble"
    static let singlesAlbum = "Singles"
    static let hour = 3600
    static let day = 86_400

    static let stations: [StationPlan] = [
        StationPlan(
            id: "st-1", name: "Morning", offline: false, onExpiry: .delete,
            validitySeconds: day, revalidateSeconds: hour),
        StationPlan(
            id: "st-2", name: "Evening Drive", offline: false, onExpiry: .delete,
            validitySeconds: day, revalidateSeconds: hour),
        StationPlan(
            id: "st-9", name: "Focus", offline: true, onExpiry: .keep,
            validitySeconds: 7 * day, revalidateSeconds: day),
        StationPlan(
            id: "st-10", name: "Workout", offline: true, onExpiry: .delete,
            validitySeconds: 3 * day, revalidateSeconds: 12 * hour),
        StationPlan(
            id: "st-11", name: "Lounge", offline: true, onExpiry: .delete,
            validitySeconds: day, revalidateSeconds: 6 * hour),
    ]

    /// Relative track lengths: track i lasts `seconds * (1 + 1.5 * spread[i % 6])`, so the
    /// default 8 s gives 8–20 s tracks.
    private static let spread: [Double] = [0, 0.6, 0.2, 0.8, 0.4, 1.0]

    /// Tracks of every offline station, e.g. `tr-9-01` … for st-9. Formats rotate across the
    /// whole lineup so that every codec appears even with one track per station.
    static func stationTracks(_ parameters: GenerationParameters) -> [String: [TrackPlan]] {
        var result: [String: [TrackPlan]] = [:]
        var serial = 0
        for station in stations where station.offline {
            let number = station.id.replacingOccurrences(of: "st-", with: "")
            var plans: [TrackPlan] = []
            for index in 0..<parameters.tracksPerStation {
                let seconds = length(index, parameters)
                let id = "tr-\(number)-" + (index < 9 ? "0\(index + 1)" : "\(index + 1)")
                let (source, filter) = signal(serial, seconds: seconds)
                plans.append(
                    TrackPlan(
                        id: id, title: "\(station.name) No. \(index + 1)", album: "\(station.name) Sessions",
                        seconds: seconds, source: source, filter: filter,
                        format: AudioFormat.allCases[serial % AudioFormat.allCases.count]))
                serial += 1
            }
            result[station.id] = plans
        }
        return result
    }

    /// Standalone products: tr-7b is what tr-7 is replaced by; tr-8 may not be downloaded.
    static func singles(_ parameters: GenerationParameters) -> [TrackPlan] {
        let specs: [(String, String, AudioFormat)] = [
            ("tr-1", "First Light", .flac), ("tr-2", "Second Wind", .aac), ("tr-3", "Third Rail", .opus),
            ("tr-7b", "Seventh Heaven (Remaster)", .flac), ("tr-8", "Eighth Note (Stream Only)", .mp3),
        ]
        return specs.enumerated().map { index, spec in
            let seconds = length(index + 1, parameters)
            let (source, filter) = signal(100 + index * 7, seconds: seconds)
            return TrackPlan(
                id: spec.0, title: spec.1, album: singlesAlbum, seconds: seconds,
                source: source, filter: filter, format: spec.2)
        }
    }

    /// Every track is a product of its own; the special products come after.
    static func products(trackIds: [String], video: CatalogHLS?, hlsTracks: [(String, CatalogHLS)]) -> [CatalogProduct] {
        func track(_ id: String, _ trackId: String? = nil) -> CatalogProduct {
            CatalogProduct(
                id: id, productType: "TRACK", trackId: trackId ?? id, hls: nil, canBeDownloaded: true,
                refusal: nil, offlineValiditySeconds: 30 * day, revalidateSeconds: day,
                licenseSecurityToken: nil, poster: nil, thumbnail: nil)
        }
        var products = trackIds.map { track($0) }
        if let index = products.firstIndex(where: { $0.id == "tr-1" }) {
            products[index].poster = "img/tr-1-poster.png"
            products[index].thumbnail = "img/tr-1-thumb.png"
        }
        if let index = products.firstIndex(where: { $0.id == "tr-8" }) {
            products[index].canBeDownloaded = false
        }
        products.append(track("tr-7", "tr-7b"))
        var geo = track("tr-geo", "tr-1")
        geo.refusal = CatalogRefusal(
            status: 403, subStatus: 4032,
            userMessage: "This content is not available in your location.")
        products.append(geo)
        var subscription = track("tr-sub", "tr-2")
        subscription.refusal = CatalogRefusal(
            status: 403, subStatus: 4033,
            userMessage: "This content is not available with your subscription.")
        products.append(subscription)
        if let video {
            products.append(
                CatalogProduct(
                    id: "vid-1", productType: "VIDEO", trackId: nil, hls: video, canBeDownloaded: true, refusal: nil,
                    offlineValiditySeconds: 30 * day, revalidateSeconds: day, licenseSecurityToken: "lst-vid-1",
                    poster: "img/vid-1-poster.png", thumbnail: "img/vid-1-thumb.png"))
        }
        for (id, presentation) in hlsTracks {
            products.append(
                CatalogProduct(
                    id: id, productType: "TRACK", trackId: nil, hls: presentation, canBeDownloaded: true, refusal: nil,
                    offlineValiditySeconds: 30 * day, revalidateSeconds: day, licenseSecurityToken: "lst-\(id)",
                    poster: nil, thumbnail: nil))
        }
        return products
    }

    private static func length(_ index: Int, _ parameters: GenerationParameters) -> Double {
        let raw = parameters.seconds * (1 + 1.5 * spread[index % spread.count])
        return (raw * 10).rounded() / 10
    }

    /// A lavfi source and filter chain for the `serial`-th track: tones, chirps, chords and
    /// noise. Each kind gets a base gain that brings it near full scale, then a per-track cut
    /// of 0 to -15 dB, so measured ReplayGain values spread over a realistic range.
    static func signal(_ serial: Int, seconds: Double) -> (source: String, filter: String) {
        let rate = "sample_rate=44100:duration=\(seconds)"
        let frequency = 220 + (serial * 83) % 660
        let cut = Double((serial * 7) % 16)
        let fadeOut = max(0, seconds - 0.5)
        let fades = "afade=t=in:d=0.3,afade=t=out:st=\(fadeOut):d=0.5"
        let source: String
        var extra = ""
        var base = 0.0
        switch serial % 6 {
        case 0:
            source = "sine=frequency=\(frequency):\(rate)"
            base = 15 // the sine source peaks at 1/8 (-18 dBFS)
        case 1:
            source = "aevalsrc=exprs=0.6*sin(2*PI*(\(frequency)+\(40 + serial % 30)*t)*t):\(rate)"
            base = 3
        case 2:
            source = "anoisesrc=color=pink:amplitude=0.4:seed=\(serial + 1):\(rate)"
            base = 4
        case 3:
            source = "sine=frequency=\(frequency):\(rate)"
            extra = "tremolo=f=5:d=0.8,"
            base = 16
        case 4:
            source = "aevalsrc=exprs=0.3*sin(2*PI*\(frequency)*t)+0.3*sin(2*PI*\(frequency * 3 / 2)*t):\(rate)"
            base = 3
        default:
            source = "anoisesrc=color=brown:amplitude=0.6:seed=\(serial + 1):\(rate)"
            base = 2
        }
        return (source, "\(extra)volume=\(base - cut)dB,alimiter=limit=0.98:level=false,\(fades)")
    }
}
