import Wire

/// Every event the player publishes, each case with its data (docs/protocol.md, "Events":
/// topics `player` and `metrics`). `topic`, `type` and `data` are the one place they are put on
/// the wire.
enum PlayerEvent: Sendable {
    // The PlaybackEngine (topic `player`).
    case playbackStateChanged(PlaybackState)
    /// `active` nil: playback ended. The display metadata are those of `context`'s track.
    case mediaProductTransition(previous: MediaProduct?, active: MediaProduct?, context: PlaybackContext?)
    case playbackQualityChanged(PlaybackContext)
    /// The active product failed: an event named like the error, just before IDLE.
    case playbackFailed(RPCError, product: MediaProduct?)
    /// The audio device cannot be used (`OutputUnavailable`), once per outage.
    case outputUnavailable(RPCError, reason: String, device: String, product: MediaProduct?)
    case outputAvailable(device: String)
    /// Another device of the account took the streaming privilege: the stream paused.
    case streamingPrivilegesRevoked(otherDevice: String, product: MediaProduct)
    /// The origin's reachability changed (`Available`, `OfflineOnly`, `NotAvailable`).
    case availability(PlaybackEngine.Availability, origin: String, localStations: Int?)

    // Streaming Metrics and Progress (topic `metrics`).
    case metric(MetricEvent)

    var topic: String {
        switch self {
        case .metric: "metrics"
        default: "player"
        }
    }

    var type: String {
        switch self {
        case .playbackStateChanged: "PlaybackStateChanged"
        case .mediaProductTransition: "MediaProductTransition"
        case .playbackQualityChanged: "PlaybackQualityChanged"
        case .playbackFailed(let error, _), .outputUnavailable(let error, _, _, _): error.name
        case .outputAvailable: "OutputAvailable"
        case .streamingPrivilegesRevoked: "StreamingPrivilegesRevoked"
        case .availability(let availability, _, _):
            switch availability {
            case .available: "Available"
            case .offlineOnly: "OfflineOnly"
            case .notAvailable, .unknown: "NotAvailable"
            }
        case .metric(let event): event.name.eventType
        }
    }

    var data: JSONValue {
        switch self {
        case .playbackStateChanged(let state):
            return ["playbackState": .string(state.rawValue)]
        case .mediaProductTransition(let previous, let active, let context):
            var fields: [String: JSONValue] = [
                "previousMediaProduct": previous?.json ?? .null,
                "activeMediaProduct": active?.json ?? .null,
                "playbackContext": context?.json ?? .null,
            ]
            fields.merge(TrackInfo.displayFields(of: context?.track)) { current, _ in current }
            return .object(fields)
        case .playbackQualityChanged(let context):
            return ["playbackContext": context.json]
        case .playbackFailed(let error, let product):
            var fields = Self.failure(error).merging(Self.naming(product)) { $1 }
            // How the origin failed, when no answer came (`TLSFailed`, `ConnectionFailed`, …).
            if let transport = error.details["transportError"] { fields["transportError"] = transport }
            return .object(fields)
        case .outputUnavailable(let error, let reason, let device, let product):
            return .object(
                Self.failure(error).merging(Self.naming(product)) { $1 }
                    .merging(["reason": .string(reason), "device": .string(device)]) { $1 })
        case .outputAvailable(let device):
            return ["device": .string(device)]
        case .streamingPrivilegesRevoked(let otherDevice, let product):
            return .object(Self.naming(product).merging(["otherDevice": .string(otherDevice)]) { $1 })
        case .availability(_, let origin, let localStations):
            var fields: [String: JSONValue] = ["origin": .string(origin)]
            if let localStations { fields["localStations"] = .number(Double(localStations)) }
            return .object(fields)
        case .metric(let event):
            return event.json
        }
    }

    private static func failure(_ error: RPCError) -> [String: JSONValue] {
        ["name": .string(error.name), "message": .string(error.message)]
    }

    /// The product an event is about, null when there is none.
    private static func naming(_ product: MediaProduct?) -> [String: JSONValue] {
        [
            "productId": product.map { .string($0.productId) } ?? .null,
            "referenceId": product?.referenceId.map { .string($0) } ?? .null,
        ]
    }
}
