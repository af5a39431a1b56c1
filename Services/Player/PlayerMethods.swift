import OriginClient
import Wire

/// The player's socket methods (docs/protocol.md, "Player"). The PlaybackEngine controls
/// return at once (TIDAL: async, progress comes as events), except that `player.load`,
/// `player.play` and `station.tune` wait up to `startAnswerLimit` for the product to start, so
/// that one failing before any sound (not found, refused by the origin, not on the device in
/// offline mode, no audio device) is answered with its error, as well as raised as the error
/// event. `player.play` and `station.tune` answer success only once the first frame is queued
/// on the device.
enum PlayerMethods {
    /// How long `player.load` and `player.play` wait to hear whether the product started; within
    /// the 10 s a client waits for an answer, and past the origin's retries of a refused request.
    static let startAnswerLimit: Duration = .seconds(5)

    // Each params type names its keys once, in `CodingKeys` (`ClosedParams`): any other is -32602.
    struct ProductParams: ClosedParams, Sendable {
        var mediaProduct: MediaProduct
        enum CodingKeys: String, CodingKey, CaseIterable { case mediaProduct }
    }
    struct OptionalProductParams: ClosedParams, Sendable {
        var mediaProduct: MediaProduct?
        enum CodingKeys: String, CodingKey, CaseIterable { case mediaProduct }
    }
    struct SeekParams: ClosedParams, Sendable {
        var position: Double
        enum CodingKeys: String, CodingKey, CaseIterable { case position }
    }
    struct StationParams: ClosedParams, Sendable {
        var stationId: String
        enum CodingKeys: String, CodingKey, CaseIterable { case stationId }
    }
    struct None: ClosedParams, Sendable {
        enum CodingKeys: CodingKey, CaseIterable {}
    }
    struct Done: Encodable, Sendable { var ok = true }

    struct LocateParams: ClosedParams, Sendable {
        var productId: String
        enum CodingKeys: String, CodingKey, CaseIterable { case productId }
    }

    /// `media.locate` and `media.server.start|stop|status` (the local media server).
    static func registerMedia(on router: inout RPCRouter, control: MediaServerControl, locator: MediaLocator) {
        router.register("media.server.start", params: None.self) { _, _ in
            let port = try await control.start()
            return ["url": .string("http://127.0.0.1:\(port)"), "running": true] as JSONValue
        }
        router.register("media.server.stop", params: None.self) { _, _ in
            await control.stop()
            return ["running": false] as JSONValue
        }
        router.register("media.server.status", params: None.self) { _, _ in
            [
                "running": .bool(control.url != nil), "url": control.url.map(JSONValue.string) ?? .null,
                "port": .number(Double(control.port)),
            ] as JSONValue
        }
        router.register("media.locate", params: LocateParams.self) { p, _ in
            guard OriginID.isValid(p.productId) else {
                throw RPCError.invalidParams("params.productId must match [A-Za-z0-9._-]{1,128}.")
            }
            return try await locator.locate(productId: p.productId)
        }
    }

    static func register(on router: inout RPCRouter, engine: PlaybackEngine) {
        router.register("player.load", params: ProductParams.self) { p, _ in
            try validate(p.mediaProduct)
            let token = await engine.load(p.mediaProduct)
            if let failure = await engine.outcome(of: token, within: startAnswerLimit) { throw failure }
            return Done()
        }
        router.register("player.setNext", params: OptionalProductParams.self) { p, _ in
            if let product = p.mediaProduct { try validate(product) }
            await engine.setNext(p.mediaProduct)
            return Done()
        }
        router.register("player.play", params: None.self) { _, _ in
            await engine.play()
            if let token = await engine.activeTokenNotStarted,
                let failure = await engine.outcome(of: token, within: startAnswerLimit)
            {
                throw failure
            }
            if let failure = await engine.soundOutcome(within: startAnswerLimit) { throw failure }
            return Done()
        }
        router.register("player.pause", params: None.self) { _, _ in
            await engine.pause()
            return Done()
        }
        router.register("player.seek", params: SeekParams.self) { p, _ in
            guard p.position.isFinite, p.position >= 0 else {
                throw RPCError.invalidParams("params.position of 'player.seek' must be a number of seconds, 0 or more.")
            }
            await engine.seek(to: p.position)
            return Done()
        }
        router.register("player.skipToNext", params: None.self) { _, _ in
            await engine.skipToNext()
            return Done()
        }
        router.register("player.reset", params: None.self) { _, _ in
            await engine.reset()
            return Done()
        }
        router.register("player.status", takes: []) { _ in await engine.status() }
        router.register("station.tune", params: StationParams.self) { p, _ in
            guard OriginID.isValid(p.stationId) else {
                throw RPCError.invalidParams("params.stationId of 'station.tune' must be 1–128 characters of A–Z, a–z, 0–9, '.', '_' or '-'.")
            }
            let tuned = try await engine.tune(stationId: p.stationId)
            if let failure = await engine.soundOutcome(within: startAnswerLimit) { throw failure }
            return tuned
        }
        router.register("station.skip", params: None.self) { _, _ in
            try await engine.stationSkip()
            return Done()
        }
        router.register("player.config.get", params: None.self) { _, _ in await engine.configGet() }
        router.register("player.config.set", params: PlayerConfig.Update.self) { p, _ in
            try await engine.configSet(p)
        }
    }

    static func validate(_ product: MediaProduct) throws(RPCError) {
        guard OriginID.isValid(product.productId) else {
            throw .invalidParams("params.mediaProduct.productId must be 1–128 characters of A–Z, a–z, 0–9, '.', '_' or '-'.")
        }
    }
}
