import Systemd
import Wire

/// What MPRIS clients see of the player, read from `player.status` (the engine's own answer,
/// so MPRIS and the socket never disagree) each time the player publishes an event.
struct MPRISState: Sendable, Equatable {
    /// "Playing", "Paused" or "Stopped".
    var playbackStatus = "Stopped"
    var productId: String?
    var title: String?
    var artist: String?
    var album: String?
    var durationSeconds: Double?
    var canGoNext = false
    var canPlay = false
    /// Seconds into the product when the state was read, and when that was (not compared: the
    /// position moves on by itself and is not announced, as MPRIS wants).
    var position: Double = 0
    var readAt: ContinuousClock.Instant = .now

    /// The object paths of tracks: the product id escaped under this prefix.
    static let trackPathPrefix = "/org/cassette/track"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    init() {}

    init(status: JSONValue) {
        productId = status["mediaProduct"]?["productId"]?.stringValue
        let state = status["playbackState"]?.stringValue ?? "IDLE"
        switch state {
        // STALLED is playing that waits for data: the app still wants sound.
        case "PLAYING", "STALLED": playbackStatus = "Playing"
        case "NOT_PLAYING" where productId != nil: playbackStatus = "Paused"
        default: playbackStatus = "Stopped"
        }
        title = status["title"]?.stringValue
        artist = status["artist"]?.stringValue
        album = status["album"]?.stringValue
        durationSeconds = status["durationSeconds"]?.doubleValue
        canPlay = productId != nil
        // Next advances a station, else plays the product set with player.setNext.
        let station = status["activeStation"].map { $0 != .null } ?? false
        let queued = status["nextMediaProduct"].map { $0 != .null } ?? false
        canGoNext = productId != nil && (station || queued)
        position = status["assetPosition"]?.doubleValue ?? 0
        readAt = .now
    }

    static func == (a: MPRISState, b: MPRISState) -> Bool {
        a.playbackStatus == b.playbackStatus && a.productId == b.productId && a.title == b.title && a.artist == b.artist
            && a.album == b.album && a.durationSeconds == b.durationSeconds && a.canGoNext == b.canGoNext && a.canPlay == b.canPlay
    }

    /// `Metadata`: the xesam fields MPRIS clients show; empty when nothing is loaded.
    var metadata: BusValue {
        guard let productId else { return .dictionary([]) }
        var entries = [BusEntry("mpris:trackid", .objectPath(prefix: Self.trackPathPrefix, id: productId))]
        if let title { entries.append(BusEntry("xesam:title", .string(title))) }
        if let artist { entries.append(BusEntry("xesam:artist", .stringArray([artist]))) }
        if let album { entries.append(BusEntry("xesam:album", .string(album))) }
        if let durationSeconds { entries.append(BusEntry("mpris:length", .int64(Int64((durationSeconds * 1_000_000).rounded())))) }
        return .dictionary(entries)
    }

    /// `Position` in microseconds: the position read, moved on by the time since while playing.
    var positionMicroseconds: Int64 {
        var seconds = position
        if playbackStatus == "Playing" {
            let (s, atto) = (ContinuousClock.now - readAt).components
            seconds += Double(s) + Double(atto) / 1e18
        }
        if let durationSeconds { seconds = min(seconds, durationSeconds) }
        return Int64((max(0, seconds) * 1_000_000).rounded())
    }

    /// The announced properties of `org.mpris.MediaPlayer2.Player` that differ from `old`.
    func changed(from old: MPRISState) -> [String] {
        var names: [String] = []
        if playbackStatus != old.playbackStatus { names.append("PlaybackStatus") }
        if metadata != old.metadata { names.append("Metadata") }
        if canGoNext != old.canGoNext { names.append("CanGoNext") }
        if canPlay != old.canPlay { names += ["CanPlay", "CanPause"] }
        return names
    }
}
