import Wire

/// Why a download does not move, from the downloader's own reason codes: an item's
/// `ItemStateChanged` to `idle` (or its status) carries `error` — `CellularNotAllowed`,
/// `MeteredNotAllowed`, `NoNetwork`, `OutsideDownloadWindow`, `CacheLimit`, `NetworkError`, `TLSFailed`, `Unauthorized` — and `reason`;
/// `network.get` says whether the network allows downloads at all. `OriginFailing` is cassettectl's own conclusion from bytes that stop
/// coming, or start over, while the network allows them.
struct StallReason: Equatable {
    var code: String
    /// The service's words, when it gave some.
    var detail: String?

    static let blocking: Set<String> = [
        "CellularNotAllowed", "MeteredNotAllowed", "NoNetwork", "CacheLimit", "NetworkError",
        "TLSFailed", "Unauthorized", "OutsideDownloadWindow",
    ]

    /// From an item's `error` and `reason`; nil for an error that is not a wait.
    static func item(error: String?, reason: String?) -> StallReason? {
        guard let error, blocking.contains(error) else { return nil }
        return StallReason(code: error, detail: reason)
    }

    /// From `network.get`: `downloads` is `none`, or `allowCellularItemsOnly` for an item
    /// that was not added with allowCellular.
    static func network(_ status: JSONValue, itemAllowsCellular: Bool = false) -> StallReason? {
        switch status["downloads"]?.stringValue {
        case "none"?:
            return StallReason(code: status["block"]?.stringValue ?? "NoNetwork", detail: status["reason"]?.stringValue)
        case "allowCellularItemsOnly"? where !itemAllowsCellular:
            return StallReason(code: status["block"]?.stringValue ?? "CellularNotAllowed", detail: status["reason"]?.stringValue)
        default:
            return nil
        }
    }

    /// Paused by someone (`offline pause`): it waits for a resume.
    static let paused = StallReason(code: "Paused", detail: nil)

    static func originFailing(_ detail: String) -> StallReason {
        StallReason(code: "OriginFailing", detail: detail)
    }

    /// A few words for the bar.
    var short: String {
        switch code {
        case "CellularNotAllowed": return "cellular not allowed"
        case "MeteredNotAllowed": return "metered link not allowed"
        case "NetworkError": return "origin not answering"
        case "TLSFailed": return "origin's TLS refused"
        case "Unauthorized": return "credentials refused"
        case "NoNetwork": return "no network"
        case "CacheLimit": return "cache full"
        case "OutsideDownloadWindow": return "outside the download windows"
        case "OriginFailing": return "origin failing"
        case "Paused": return "paused"
        default: return code
        }
    }

    /// One line: what, the service's words, and what to run.
    var message: String {
        var text = "waiting: \(short)"
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        switch code {
        case "CellularNotAllowed":
            text += "; `cassettectl policy set --allow-cellular yes` allows it, or it resumes on Wi-Fi or Ethernet"
        case "MeteredNotAllowed":
            text += "; `cassettectl policy set --allow-metered yes` allows it, or it resumes on an unmetered link"
        case "NetworkError":
            text += "; the downloader tries the origin again by itself and resumes from the bytes on disk"
        case "TLSFailed":
            text += "; check originCAFile, originPinnedPublicKey and the device clock; the downloader tries again every minute by itself"
        case "Unauthorized":
            text += "; check the client token and secret in the configuration; it resumes by itself once the origin takes them"
        case "NoNetwork":
            text += "; it resumes by itself when the network is back (`cassettectl network get`)"
        case "CacheLimit":
            text += "; `cassettectl offline delete <product>` frees room, `cassettectl policy set --max-cache-bytes 4G` raises the limit"
        case "OutsideDownloadWindow":
            text += "; it starts by itself when a window opens (`cassettectl policy get`), or now with `cassettectl offline add <product> --now`"
        case "OriginFailing":
            text += "; the downloader keeps trying (`cassettectl watch downloader` shows the details)"
        case "Paused":
            text += "; `cassettectl offline resume <product>` resumes it"
        default:
            break
        }
        return text
    }
}
