import Foundation
import Wire

/// What to run next after an error, naming cassettectl commands (the services' own messages
/// are written for app developers and name RPC methods).
enum Hints {
    /// The hint with `<station>` and `<product>` filled in from the call's params when it had them.
    /// `reason` is the error's `data.reason`, where the service names one.
    static func forError(_ name: String, service: ServiceName, params: JSONValue, reason: String? = nil) -> String? {
        let offlineStation = name == "StationNotPlayable" && reason == "OfflineMode"
        guard var hint = offlineStation ? offlineModeStation : forError(name, service: service) else { return nil }
        if let station = params["stationId"]?.stringValue { hint = hint.replacingOccurrences(of: "<station>", with: station) }
        if let product = (params["productId"] ?? params["mediaProduct"]?["productId"])?.stringValue {
            hint = hint.replacingOccurrences(of: "<product>", with: product)
        }
        return hint
    }

    /// A station neither on the device nor askable while offline mode is on: syncing it needs
    /// the origin too, so the way out is going online.
    static let offlineModeStation =
        "the player is in offline mode and <station> is not on the device: `cassettectl config set --offline-mode no` streams it (and lets `cassettectl sync <station>` take it offline)."

    static func forError(_ name: String, service: ServiceName) -> String? {
        switch name {
        case "StationNotPlayable":
            return "run `cassettectl sync <station>` to take it offline first (`cassettectl stations` lists them)."
        case "NothingToPlay":
            return "nothing is playing: `cassettectl tune <station>` or `cassettectl load <product> --play`."
        case "IllegalPlaybackRequest":
            return
                "the player is in offline mode and the product is not on the device: `cassettectl offline add <product> --wait`, or `cassettectl config set --offline-mode no`."
        case "OfflineNotValid":
            return
                "`cassettectl sync-now` (online) re-validates, `cassettectl offline renew-license <product>` renews a license; `cassettectl offline status <product>` says what expired."
        case "UnknownSource":
            return "`cassettectl catalog sources` lists the sources (`cassettectl catalog refresh` fetches the newest)."
        case "UnknownCategory":
            return "`cassettectl catalog categories` lists the categories (`cassettectl catalog refresh` fetches the newest)."
        case "UnknownItem":
            return "`cassettectl catalog items` lists the items (`cassettectl catalog refresh` fetches the newest)."
        case "UnknownToken":
            return "`cassettectl offline list` shows the offlines with their tokens and products."
        case "NoLicense":
            return "give terms: `cassettectl offline renew-license <product> --purchase` or `--rental-seconds N`."
        case "CellularNotAllowed":
            return "`cassettectl policy set --allow-cellular yes` allows downloads over cellular."
        case "CacheLimit":
            return "free room with `cassettectl offline delete <product>`, or raise the limit: `cassettectl policy set --max-cache-bytes 4G`."
        case "StorageFull":
            return "the disk is full: free space (`cassettectl offline delete <product>` removes offline content) and try again."
        case "QueueFull":
            return "the play log is full: `cassettectl playlog flush` delivers it (`cassettectl playlog status` shows why it is not going)."
        case "NoOrigin", "OriginNotConfigured":
            return "no origin is configured: set `origin` in /etc/cassette/cassette.json and restart the \(service.rawValue)."
        case "OfflineMode":
            return "the app is in offline mode, so nothing goes to the origin: `cassettectl config set --offline-mode no` to go online."
        case "OriginUnreachable":
            return "the origin cannot be reached: check the network (`cassettectl network get`); the \(service.rawValue) keeps trying by itself."
        case "TLSFailed":
            return
                "the origin's TLS edge was refused: check `originCAFile` (the CA bundle), `originPinnedPublicKey` (the pins) in /etc/cassette/cassette.json and the device clock (`date`); the \(service.rawValue) tries again every minute by itself."
        case "Unauthorized":
            return
                "the origin refuses the credentials: set `clientToken` and `clientSecret` in /etc/cassette/cassette.json and restart the \(service.rawValue) (`cassettectl status` says when the origin refuses them)."
        case "OutputUnavailable", "OutputFailed":
            return
                "no audio device could be opened: `aplay -L` lists the PCMs ALSA knows; set `audioDevice` in the `player` section of /etc/cassette/cassette.json (or --audio-device) to one of them and restart the player. It keeps retrying the device and plays by itself once it opens (`cassettectl now` shows the output)."
        case "InvalidState":
            return "`cassettectl offline status <product>` shows its state."
        default:
            return nil
        }
    }
}
