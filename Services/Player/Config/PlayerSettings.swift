import ServiceKit
import Systemd
import Wire

/// The `player` section of the config file: device sizes and the play log's timing. Fixed at
/// start (unlike `PlayerConfig`, which the app changes over the socket).
struct PlayerSettings: Sendable, Equatable {
    /// ALSA buffer, in ms; nil means `OutputSettings.defaultBufferMilliseconds` (60 ms).
    var bufferMilliseconds: Int?
    /// ALSA period, in ms; nil means a quarter of the buffer.
    var periodMilliseconds: Int?
    /// How far the decoder may run ahead of the device, in seconds of 48 kHz stereo 32-bit PCM.
    var decodeAheadSeconds: Double = 2
    /// How often an open play's progress is saved (what a kill -9 can lose at most).
    var playProgressSeconds: Double = 2
    /// First pause before handing play events to the reporter again after a failure.
    var playLogRetrySeconds: Double = 2

    /// The ALSA PCM and the pacing, when the `--audio-device` / `--audio-pace` flags are absent.
    var audioDevice: String?
    var audioPace: AudioPace?

    /// Bound of the HTTP cache of streamed media (`<state-dir>/cache/http`), in MiB.
    var httpCacheMegabytes: Double = 256

    /// The local media server's loopback port (`media.server.start`); 0: any free port.
    var mediaServerPort = 0

    /// This device's name in streaming sessions (who another device took the privilege from);
    /// nil: the host name.
    var deviceName: String?

    /// How often the origin is asked whether it answers (`Available` / `OfflineOnly` / `NotAvailable`).
    var availabilityCheckSeconds: Double = 30

    /// The D-Bus bus MPRIS is served on (`mprisBus`): the system bus unless the config says otherwise.
    var mprisBus = MPRISBusChoice.bus(.system)

    static let keys: Set<String> =
        ([
            "bufferMilliseconds", "periodMilliseconds", "decodeAheadSeconds",
            "playProgressSeconds", "playLogRetrySeconds", "httpCacheMegabytes",
            "audioDevice", "audioPace", "mediaServerPort", "deviceName",
            "availabilityCheckSeconds", "mprisBus",
        ] as Set<String>).union(MetricsSettings.keys)

    /// Reads the section; a wrong type or range stops the service with `ConfigInvalid`.
    init(section: [String: JSONValue]?) throws(DaemonError) {
        guard let section else { return }
        func number(_ key: String, _ range: ClosedRange<Double>) throws(DaemonError) -> Double? {
            guard let value = section[key] else { return nil }
            guard let n = value.doubleValue, n.isFinite, range.contains(n) else {
                throw DaemonError(.configInvalid, "player.\(key) must be a number from \(range.lowerBound) to \(range.upperBound).")
            }
            return n
        }
        bufferMilliseconds = try number("bufferMilliseconds", 10...10_000).map { Int($0) }
        periodMilliseconds = try number("periodMilliseconds", 1...5_000).map { Int($0) }
        if let v = try number("decodeAheadSeconds", 0.2...60) { decodeAheadSeconds = v }
        if let v = try number("playProgressSeconds", 0.2...600) { playProgressSeconds = v }
        if let v = try number("playLogRetrySeconds", 0.1...3_600) { playLogRetrySeconds = v }
        if let v = try number("httpCacheMegabytes", 1...1_048_576) { httpCacheMegabytes = v }
        if let v = try number("mediaServerPort", 0...65_535) {
            guard v.rounded() == v else { throw DaemonError(.configInvalid, "player.mediaServerPort must be a whole port number (0: any free port).") }
            mediaServerPort = Int(v)
        }
        if let v = try number("availabilityCheckSeconds", 0.5...86_400) { availabilityCheckSeconds = v }
        mprisBus = try MPRISBusChoice(config: section["mprisBus"])
        if let value = section["deviceName"] {
            guard let name = value.stringValue, !name.isEmpty, name.count <= 128 else {
                throw DaemonError(.configInvalid, "player.deviceName must be a name of 1 to 128 characters.")
            }
            deviceName = name
        }
        if let value = section["audioDevice"] {
            guard let device = value.stringValue, !device.isEmpty else {
                throw DaemonError(.configInvalid, "player.audioDevice must be an ALSA PCM name such as \"default\" or \"hw:0,0\".")
            }
            audioDevice = device
        }
        if let value = section["audioPace"] {
            guard let pace = value.stringValue.flatMap(AudioPace.init(rawValue:)) else {
                throw DaemonError(.configInvalid, "player.audioPace must be \"device\" or \"realtime\".")
            }
            audioPace = pace
        }
    }

    init() {}

    var httpCacheBytes: Int64 { Int64(httpCacheMegabytes * 1_048_576) }
    var aheadBytes: Int { Int(decodeAheadSeconds * 48_000 * 8) }
}
