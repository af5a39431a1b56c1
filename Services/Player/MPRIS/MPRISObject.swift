import Systemd

/// The object `/org/mpris/MediaPlayer2` as the MPRIS D-Bus Interface Specification (2.2)
/// describes it: `org.mpris.MediaPlayer2` (who the player is) and
/// `org.mpris.MediaPlayer2.Player` (the controls and what plays). The player has no track list,
/// cannot go back, seek, raise a window or be quit over the bus; its rate and volume are fixed.
enum MPRISObject {
    static let path = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    static func interfaces(state: @escaping @Sendable () -> MPRISState, send: @escaping @Sendable (MPRISCommand) -> Void) -> [BusInterface] {
        let root = BusInterface(
            name: rootInterface,
            methods: [BusInterface.Method("Raise") {}, BusInterface.Method("Quit") {}],
            properties: [
                .init("CanQuit", "b", .constant), .init("CanRaise", "b", .constant), .init("HasTrackList", "b", .constant),
                .init("Identity", "s", .constant), .init("SupportedUriSchemes", "as", .constant),
                .init("SupportedMimeTypes", "as", .constant),
            ]
        ) { name in
            switch name {
            case "Identity": .string("Cassette")
            case "SupportedUriSchemes", "SupportedMimeTypes": .stringArray([])
            default: .bool(false)
            }
        }
        let player = BusInterface(
            name: playerInterface,
            methods: [
                BusInterface.Method("Play") { send(.play) }, BusInterface.Method("Pause") { send(.pause) },
                BusInterface.Method("PlayPause") { send(.playPause) }, BusInterface.Method("Next") { send(.next) },
                BusInterface.Method("Stop") { send(.stop) },
                // CanGoPrevious and CanSeek are false and no URI scheme is supported: these do nothing.
                BusInterface.Method("Previous") {}, BusInterface.Method("Seek", signature: "x") {},
                BusInterface.Method("SetPosition", signature: "ox") {}, BusInterface.Method("OpenUri", signature: "s") {},
            ],
            signals: [("Seeked", "x")],
            properties: [
                .init("PlaybackStatus", "s", .emits), .init("Metadata", "a{sv}", .emits), .init("Position", "x", .silent),
                .init("Rate", "d", .constant), .init("MinimumRate", "d", .constant), .init("MaximumRate", "d", .constant),
                .init("Volume", "d", .constant), .init("CanGoNext", "b", .emits), .init("CanGoPrevious", "b", .constant),
                .init("CanPlay", "b", .emits), .init("CanPause", "b", .emits), .init("CanSeek", "b", .constant),
                .init("CanControl", "b", .constant),
            ]
        ) { name in
            let now = state()
            switch name {
            case "PlaybackStatus": return .string(now.playbackStatus)
            case "Metadata": return now.metadata
            case "Position": return .int64(now.positionMicroseconds)
            case "Rate", "MinimumRate", "MaximumRate", "Volume": return .double(1)
            case "CanGoNext": return .bool(now.canGoNext)
            case "CanPlay", "CanPause": return .bool(now.canPlay)
            case "CanControl": return .bool(true)
            default: return .bool(false)
            }
        }
        return [root, player]
    }
}
