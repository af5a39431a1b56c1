import Foundation
import Logging
import OriginClient
import StateDB
import Wire

/// TIDAL OE / Brightcove media products: `offline.add` and the calls on its token. A token is a
/// row of `offlineProducts`, so it, the product's state and its attempts survive restarts.
actor OfflineProducts {
    private let products: ProductStore
    private let licenseStore: LicenseStore
    private let files: FileStore
    private let origin: OriginClient?
    private let store: MediaFolder
    private let engine: DownloadEngine
    private let events: DownloaderEvents
    private let licenses: LicenseClient?
    private let logger: Logger

    init(
        catalog: StateDB, origin: OriginClient?, store: MediaFolder, engine: DownloadEngine,
        events: DownloaderEvents, licenses: LicenseClient?, logger: Logger
    ) {
        self.products = ProductStore(catalog: catalog)
        self.licenseStore = LicenseStore(catalog: catalog)
        self.files = FileStore(catalog: catalog)
        self.origin = origin
        self.licenses = licenses
        self.store = store
        self.engine = engine
        self.events = events
        self.logger = logger
    }

    // MARK: offline.add

    /// `terms` asks for a license first (Brightcove: the license exchange comes before the
    /// download); a product whose playbackinfo carries a `licenseSecurityToken` gets a purchase
    /// license when no terms are named and none was preloaded.
    ///
    /// `automatic`: the downloader asks by itself (catalog prepositioning); such content may give
    /// way to explicit requests. An explicit request for a product already asked for automatically
    /// makes that request explicit.
    ///
    /// `prepositionSeconds` (automatic requests of HLS products only): only the segments that
    /// cover the presentation's first seconds are downloaded; every file is still listed. The
    /// product ends `partiallyCached`. An explicit request for such a product downloads the rest.
    ///
    /// `properties`: the display name and `referenceId` the app gives the token (a request again
    /// keeps those it does not name).
    ///
    /// An explicit request again for an HLS product held (or downloading) that names languages it
    /// does not hold adds those renditions to the same token (Brightcove "Downloading Secondary
    /// Tracks"): planned again with the held variant and languages plus the new ones, only the
    /// new files are downloaded, and the product stays playable on what it holds meanwhile.
    func add(
        productId: String, productType: String?, quality choice: QualityChoice, allowCellular: Bool = false,
        now downloadNow: Bool = false, terms: LicenseTerms? = nil, presentation: PresentationChoice = PresentationChoice(),
        properties: TokenProperties = TokenProperties(),
        automatic: Bool = false, prepositionSeconds: Double? = nil, retry: RetryPolicy = .offlining
    ) async throws -> JSONValue {
        guard let origin, let licenses else { throw DownloaderError.noOrigin() }
        let existing = try await products.openRequest(productId: productId)
        var held: ProductStore.Held?
        if let existing { held = try await products.held(token: existing.token) }
        let limit = automatic ? prepositionSeconds : nil
        var presentation = presentation
        var choice = choice
        var addition: SecondaryTracks?
        // The same request twice gets the same token; a failed one is started again (explicit
        // re-request), one that only holds a preloaded license starts its download now, and an
        // explicit request for a partial one plans the whole presentation again.
        if let existing, !["failed", "discovered"].contains(existing.state), automatic || existing.prepositionSeconds == nil {
            if !automatic, let held, let tracks = try SecondaryTracks(asked: presentation, held: held, productId: productId) {
                addition = tracks
                presentation = tracks.choice
                choice = QualityChoice(requested: held.quality ?? choice.first, productType: choice.productType, policy: choice.policy)
            } else {
                if !automatic { try await products.makeExplicit(token: existing.token) }
                try await products.setProperties(token: existing.token, properties)
                events.references.set(properties.referenceId, token: existing.token)
                if allowCellular {
                    // Asked again with the cellular override: it applies to the existing request.
                    try await products.allowCellular(token: existing.token)
                }
                if downloadNow {
                    // Asked again with `now`: the existing request passes the download windows too.
                    try await products.downloadNow(token: existing.token)
                }
                if allowCellular || downloadNow { await engine.weigh() }
                return try await status(token: existing.token)
            }
        }
        let (info, quality) = try await playbackInfo(productId, choice: choice, retry: retry)
        if let addition, let held, info["manifestHash"]?.stringValue != held.manifestHash {
            throw DownloaderError.invalidState(
                """
                \(productId) changed at the origin since it was offlined (another manifestHash); \
                sync.now re-offlines it, then its \(addition.what) can be added.
                """)
        }
        let tokenProperties = properties.over(TokenProperties(options: held?.options))
        let manifestType = info["manifestType"]?.stringValue ?? "progressive"
        let planner = HLSPlanner(origin: origin)
        var item: ManifestItem
        var files: [PlannedFile] = []
        var options: [String: JSONValue] = [:]
        var keyIds: [String] = []
        if manifestType == "hls" {
            let actual = info["productId"]?.stringValue ?? productId
            guard OriginID.isValid(actual) else {
                throw DownloaderError.hostileManifest("the actual product id \(actual.prefix(140).debugDescription) is not a plain token")
            }
            let plan = try await planner.plan(
                productId: actual, info: info, bitrate: presentation.bitrate,
                audioLanguages: presentation.audioLanguages,
                subtitleLanguages: presentation.subtitleLanguages, retry: retry)
            item = try planner.masterItem(plan.master, productId: actual, info: info)
            item.productType = info["productType"]?.stringValue ?? productType ?? "VIDEO"
            files = plan.files + (try planner.images(productId: actual, info: info))
            keyIds = plan.keyIds
            var kept = plan.choice.json.objectValue ?? [:]
            // What the files of unknown size are expected to hold, for status and admission
            // until their `GET`s tell (`UnknownSizes`).
            kept["estimate"] = UnknownSizes(files).json
            if let bitrate = presentation.bitrate { kept["bitrate"] = .number(Double(bitrate)) }
            if let limit { kept["prepositionSeconds"] = .number(limit) }
            // The playlists of the renditions being added to a presentation that was complete,
            // which the media server leaves out of the master playlist until the product is
            // `cached` again (it stays playable on what it held meanwhile). Added to one still
            // downloading, they are simply more of its files.
            let before = held?.options["adding"]?.arrayValue?.compactMap(\.stringValue) ?? []
            if let held, addition != nil, existing?.state == "cached" || !before.isEmpty {
                let added = before + files.filter { $0.role == .playlist && !held.fileNames.contains($0.name) }.map(\.name)
                if !added.isEmpty { kept["adding"] = .array(added.map(JSONValue.string)) }
            }
            options = kept
        } else {
            if let field = presentation.firstField {
                throw RPCError.invalidParams("params.\(field) applies to HLS products only; \(productId) is one progressive file.")
            }
            item = try Self.offlineItem(info, productId: productId, productType: productType, origin: origin).get()
            // A progressive product's poster and thumbnail are its `productFiles`, as a
            // presentation's are: planned and refused the same way (their size told by their
            // `GET`), and counted with the main file in its `sizeBytes`, `bytesOnDisk` and
            // `progress`; it is `cached` once they are verified too. A re-offline stages and
            // swaps them with the file.
            files = try Self.progressiveImages(productId: item.id, info: info, origin: origin)
            if !files.isEmpty { options = ["estimate": UnknownSizes(files).json] }
        }
        // The URL the content is downloaded from, kept as a reference (it may expire).
        let source = info["manifest"]?["url"]?.stringValue.flatMap { try? origin.resolveURL($0) }
        TokenProperties(onlineSourceURL: source).over(tokenProperties).apply(to: &options)
        let actual = item.id
        let token = existing?.token ?? UUID().uuidString.lowercased()
        var license: GrantedLicense?
        if terms != nil || (LicenseClient.securityToken(info) != nil && existing?.licenseId == nil) {
            license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms ?? .purchase, retry: retry)
        }
        // Every key an EXT-X-KEY names is fetched under the license now, so the presentation
        // plays offline; the keys stay in the catalog with the license.
        var extraKeys: (licenseId: String, keys: [String: [UInt8]])?
        if !keyIds.isEmpty {
            if var granted = license {
                for keyId in keyIds where granted.keys[keyId] == nil {
                    granted.keys[keyId] = try await licenses.fetchKey(keyId, licenseId: granted.id, retry: retry)
                }
                license = granted
            } else if let existing, case let (held?, ids) = try await products.heldKeyIds(token: existing.token) {
                var missing: [String: [UInt8]] = [:]
                for keyId in keyIds where !ids.contains(keyId) {
                    missing[keyId] = try await licenses.fetchKey(keyId, licenseId: held, retry: retry)
                }
                extraKeys = (held, missing)
            } else {
                throw DownloaderError.hostileManifest("\(productId) is encrypted but its playbackinfo asks for no license")
            }
        }
        var request = ProductStore.NewRequest(
            token: token, requestedProductId: productId, productId: actual, item: item,
            quality: quality, manifestHash: info["manifestHash"]?.stringValue,
            validity: Validity(info), allowCellular: allowCellular, license: license)
        request.automatic = automatic
        request.downloadNow = downloadNow
        request.files = files
        request.wantedSeconds = manifestType == "hls" ? limit : nil
        request.options = options.isEmpty ? nil : String(decoding: JSONValue.object(options).serialized(), as: UTF8.self)
        request.extraKeys = extraKeys
        let (state, stale) = try await products.add(request, now: Date())
        events.references.set(tokenProperties.referenceId, token: token)
        for (fileId, path) in stale {
            // The origin now promises other content under this name: the old bytes go.
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
        }
        if let license { licenseEvent(.acquired, token: token, productId: productId, license) }
        let product = ProductRef(token: token, productId: actual)
        events.publish(.itemStateChanged(.product(product), state: state.rawValue))
        if state == .cached { events.publish(.offlineDone(product)) }
        await engine.weigh()
        return try await status(token: token)
    }

    /// `offline.variants`: the variants and renditions an HLS product offers (Brightcove).
    func variants(productId: String, quality: String?, retry: RetryPolicy) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let info = try await playbackInfo(productId, quality: quality, retry: retry)
        guard info["manifestType"]?.stringValue == "hls" else {
            throw DownloaderError.notSupported("\(productId) is not an HLS product; it has no variants to choose from.")
        }
        let (_, _, master) = try await HLSPlanner(origin: origin).master(productId: productId, info: info, retry: retry)
        var answer = HLSChoice.offer(master).objectValue ?? [:]
        answer["productId"] = .string(info["productId"]?.stringValue ?? productId)
        return .object(answer)
    }

    /// The offline playbackinfo of `productId`; refuses one that may not be downloaded.
    private func playbackInfo(_ productId: String, quality: String?, retry: RetryPolicy) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let info = try await Self.offlinePlaybackInfo(productId, quality: quality, origin: origin, retry: retry)
        guard info["canBeDownloaded"]?.boolValue == true else { throw DownloaderError.notDownloadable(productId) }
        return info
    }

    /// The offline playbackinfo at the quality `choice` settles on, and that quality.
    private func playbackInfo(_ productId: String, choice: QualityChoice, retry: RetryPolicy) async throws -> (JSONValue, String) {
        guard let origin else { throw DownloaderError.noOrigin() }
        let (info, quality) = try await Self.offlinePlaybackInfo(productId, choice: choice, origin: origin, retry: retry)
        guard info["canBeDownloaded"]?.boolValue == true else { throw DownloaderError.notDownloadable(productId) }
        return (info, quality)
    }

    // MARK: Licenses (Brightcove)

    /// `offline.preloadLicense`: a license before any content, so a batch of downloads can run
    /// later without a license exchange (Brightcove "Preload a FairPlay license"). It makes the
    /// offline token, state `discovered`, that a later `offline.add` of the product downloads
    /// into. A product already requested gets its license renewed instead.
    /// `properties` (a display name, the app's `referenceId`) are kept with the token, as
    /// `offline.add` keeps them.
    func preloadLicense(
        productId: String, productType: String?, quality choice: QualityChoice, terms: LicenseTerms?,
        properties: TokenProperties = TokenProperties(), retry: RetryPolicy = .offlining
    ) async throws -> JSONValue {
        guard let licenses else { throw DownloaderError.noOrigin() }
        if let existing = try await products.openRequest(productId: productId), existing.state != "failed" {
            try await products.setProperties(token: existing.token, properties)
            events.references.set(properties.referenceId, token: existing.token)
            let held = try await licenseStore.currentTerms(token: existing.token)
            return try await renewLicense(token: existing.token, terms: terms ?? held ?? .purchase, retry: retry)
        }
        let (info, quality) = try await playbackInfo(productId, choice: choice, retry: retry)
        let license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms ?? .purchase, retry: retry)
        let token = UUID().uuidString.lowercased()
        let type = info["productType"]?.stringValue ?? productType ?? "TRACK"
        try await products.addPreloaded(
            token: token, requestedProductId: productId, productType: type, quality: quality,
            license: license, now: Date())
        try await products.setProperties(token: token, properties)
        events.references.set(properties.referenceId, token: token)
        licenseEvent(.acquired, token: token, productId: productId, license)
        return try await status(token: token)
    }

    /// `offline.renewLicense`: a new license for content already held, downloading nothing again
    /// (Brightcove "Renewing a FairPlay license"). Without terms, the current license's are reused.
    func renewLicense(token: String, terms: LicenseTerms?, retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let licenses else { throw DownloaderError.noOrigin() }
        let (row, held) = try await products.renewable(token: token)
        guard let row else { throw DownloaderError.unknownToken(token) }
        guard row.state != ItemState.deleted.rawValue else {
            throw DownloaderError.invalidState("\(token) is deleted; offline.add requests it again.")
        }
        guard let terms = terms ?? held else { throw DownloaderError.noLicense(token) }
        let productId = row.requestedProductId
        // A fresh playbackinfo, as Brightcove asks for a freshly retrieved video: the security
        // token and key ids may have changed since the content was downloaded.
        let info = try await playbackInfo(productId, quality: row.quality, retry: retry)
        let license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms, retry: retry)
        try await licenseStore.renew(license, token: token, productId: productId)
        licenseEvent(.renewed, token: token, productId: productId, license)
        return try await status(token: token)
    }

    private func licenseEvent(_ event: DownloaderEvent.LicenseEvent, token: String, productId: String, _ license: GrantedLicense) {
        events.publish(.license(event, ProductRef(token: token, productId: productId), kind: license.terms.kind, expiresAt: license.expiresAt))
    }

    // MARK: Reading

    func status(token: String) async throws -> JSONValue {
        guard let value = try await products.status(token: token) else { throw DownloaderError.unknownToken(token) }
        return value
    }

    func list(state: String?, sort: String?) async throws -> JSONValue {
        let order: ProductStore.Order
        switch sort ?? "requestedAt" {
        case "requestedAt": order = .requestedAt
        case "-requestedAt": order = .newestFirst
        case "productId": order = .productId
        case "state": order = .state
        default: throw RPCError.invalidParams("params.sort must be requestedAt, -requestedAt, productId or state.")
        }
        if let state, ItemState(rawValue: state) == nil {
            throw RPCError.invalidParams("params.filter must be one of \(ItemState.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let items = try await products.statuses(state: state, order: order)
        return ["items": .array(items)]
    }

    // MARK: pause / resume / cancel / delete

    func pause(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        if state == .paused { return try await status(token: token) }
        guard state.wantsBytes || state == .discovered else {
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); only a queued or downloading item can be paused.")
        }
        try await products.pause(token: token, now: Date())
        await engine.dropUnwanted()
        events.publish(.itemStateChanged(.product(ProductRef(token: token, productId: productId)), state: "paused"))
        return try await status(token: token)
    }

    func resume(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        guard state == .paused || state == .failed else {
            if state.wantsBytes || state == .cached { return try await status(token: token) }
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); offline.add requests it again.")
        }
        let now = Date()
        let newState = try await products.resume(token: token, now: now)
        events.publish(.itemStateChanged(.product(ProductRef(token: token, productId: productId)), state: newState.rawValue))
        await engine.weigh()
        return try await status(token: token)
    }

    /// Stops a download for good: Failed with `Cancelled`; content nobody else wants is removed.
    func cancel(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        guard state.wantsBytes || state == .paused || state == .discovered else {
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); only an unfinished download can be cancelled (offline.delete removes content).")
        }
        let now = Date()
        let orphaned = try await products.cancel(token: token, now: now)
        await engine.dropUnwanted()
        for (fileId, path) in orphaned {
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
            _ = try? await files.forgetPartial(fileId: fileId)
        }
        let product = ProductRef(token: token, productId: productId)
        events.publish(.offlineFailed(product, error: ItemError.cancelled.rawValue, reason: "cancelled by request"))
        events.publish(.itemStateChanged(.product(product), state: "failed", error: ItemError.cancelled.rawValue))
        return try await status(token: token)
    }

    func delete(token: String) async throws -> JSONValue {
        let (_, productId) = try await current(token)
        try await deleteTokens([token])
        let product = ProductRef(token: token, productId: productId)
        events.publish(.offlineDeleted(product))
        events.publish(.itemStateChanged(.product(product), state: "deleted"))
        return try await status(token: token)
    }

    func deleteAll() async throws -> JSONValue {
        let tokens = try await products.activeTokens()
        try await deleteTokens(tokens)
        events.publish(.allOfflinesDeleted(count: tokens.count))
        return ["deleted": .number(Double(tokens.count))]
    }

    private func deleteTokens(_ tokens: [String]) async throws {
        guard !tokens.isEmpty else { return }
        let garbage = try await products.delete(tokens: tokens, now: Date())
        await engine.discard(garbage)
    }

    private func current(_ token: String) async throws -> (ItemState, String) {
        guard let row = try await products.current(token: token) else { throw DownloaderError.unknownToken(token) }
        return (ItemState(rawValue: row.state) ?? .failed, row.productId)
    }

    // MARK: offline.state

    func offlineState(productId: String, now: Date) async throws -> JSONValue {
        let state = try await products.offlineState(productId: productId, now: now)
        return ["productId": .string(productId), "state": .string(state.rawValue)]
    }
}
