import Foundation
import OriginClient
import Wire

/// The downloader's methods (docs/protocol.md, "Downloader"). Ids in params are checked
/// against the origin's id rule before they reach a URL or the catalog.
enum DownloaderMethods {
    // Each params type names its keys once, in `CodingKeys` (`ClosedParams`): any other is -32602.
    struct StationParams: ClosedParams, Sendable {
        var stationId: String
        var targetMinutes: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case stationId, targetMinutes }
    }
    struct AddParams: ClosedParams, Sendable {
        var productId: String
        var productType: String?
        var quality: String?
        /// Per-item override of the policy's `allowCellular`.
        var allowCellular: Bool?
        /// Per-item exception to the policy's `downloadWindows`: downloads outside them too.
        var now: Bool?
        /// License terms: a rental of this many seconds, or a purchase.
        var rentalSeconds: Double?
        var purchase: Bool?
        /// HLS: the variant whose BANDWIDTH is closest at or below it; renditions by language.
        var bitrate: Double?
        var audioLanguages: [String]?
        var subtitleLanguages: [String]?
        /// The name a person sees for the download (Brightcove); the app's id looped back in events (TIDAL).
        var displayName: String?
        var referenceId: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case productId, productType, quality, allowCellular, now, rentalSeconds, purchase
            case bitrate, audioLanguages, subtitleLanguages, displayName, referenceId
        }
    }
    /// `offline.variants`: what an HLS product offers.
    struct VariantsParams: ClosedParams, Sendable {
        var productId: String
        var quality: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case productId, quality }
    }
    /// `offline.preloadLicense`: a license before the content (Brightcove).
    struct PreloadParams: ClosedParams, Sendable {
        var productId: String
        var productType: String?
        var quality: String?
        var rentalSeconds: Double?
        var purchase: Bool?
        var displayName: String?
        var referenceId: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case productId, productType, quality, rentalSeconds, purchase, displayName, referenceId }
    }
    /// `offline.renewLicense`: new terms, or the current license's when none are named.
    struct RenewParams: ClosedParams, Sendable {
        var token: String
        var rentalSeconds: Double?
        var purchase: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable { case token, rentalSeconds, purchase }
    }
    /// `offline.estimate`: one `productId`, or several in `productIds`; `quality` and
    /// `productType` pick the quality as `offline.add` does.
    struct EstimateParams: ClosedParams, Sendable {
        var productId: String?
        var productIds: [String]?
        var productType: String?
        var quality: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case productId, productIds, productType, quality }
    }
    struct TokenParams: ClosedParams, Sendable {
        var token: String
        enum CodingKeys: String, CodingKey, CaseIterable { case token }
    }
    struct ProductParams: ClosedParams, Sendable {
        var productId: String
        enum CodingKeys: String, CodingKey, CaseIterable { case productId }
    }
    struct ListParams: ClosedParams, Sendable {
        var filter: String?
        var sort: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case filter, sort }
    }
    struct Empty: ClosedParams, Sendable {
        enum CodingKeys: CodingKey, CaseIterable {}
    }

    static func register(on router: inout RPCRouter, core: Task<DownloaderCore, Error>) {
        router.register("stations.list", params: Empty.self) { _, _ in
            let ready = try await core.value
            // localOffline never lists a station that has expired by now, even between expiry checks.
            _ = try? await ready.offlineExtension.expire()
            return try await ready.stations.list()
        }
        router.register("stations.sync", params: StationParams.self) { p, _ in
            try checkId(p.stationId, field: "stationId")
            if let minutes = p.targetMinutes, !(minutes.isFinite && minutes >= 0) {
                throw RPCError.invalidParams("params.targetMinutes must be a non-negative number or absent.")
            }
            let retry = RetryPolicy.interactive.startingNow()
            let ready = try await core.value
            do {
                return try await ready.stations.sync(stationId: p.stationId, targetMinutes: p.targetMinutes, retry: retry)
            } catch {
                await ready.stations.recordFailure(stationId: p.stationId, error: error)
                throw error
            }
        }
        // Extend what is held now (Feed.fm), store the new expiries and apply expiry, then
        // re-validate the products that are due (TIDAL). A failed extension does not stop the
        // re-validation (another endpoint may answer): it is reported in `extensionError`, and
        // thrown when no re-validation got through either.
        router.register("sync.now", params: Empty.self) { _, _ in
            let ready = try await core.value
            // Someone is waiting for the answer: one quick retry, not the offlining patience, and
            // all of the call's origin requests within the interactive deadline.
            let deadline = CallDeadline()
            var fields: [String: JSONValue] = [:]
            var extensionError: (any Error)?
            do {
                fields = try await ready.offlineExtension.extend(retry: deadline.bounding(StationSync.quickPolicy)).objectValue ?? [:]
            } catch let error as DownloaderError where error.name == "NoOrigin" {
                throw error
            } catch {
                extensionError = error
                fields["extensionError"] = .string("\(error)")
            }
            let outcomes = await ready.revalidator.round(within: deadline)
            if let extensionError, !outcomes.contains(where: { $0.result != .failed }) { throw extensionError }
            fields["revalidated"] = .array(outcomes.map(\.json))
            return JSONValue.object(fields)
        }
        router.register("offline.preloadLicense", params: PreloadParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            if let quality = p.quality { try checkId(quality, field: "quality") }
            let terms = try LicenseTerms.from(rentalSeconds: p.rentalSeconds, purchase: p.purchase)
            let properties = TokenProperties(
                displayName: try TokenProperties.checked(p.displayName, field: "displayName"),
                referenceId: try TokenProperties.checked(p.referenceId, field: "referenceId"))
            let retry = RetryPolicy.interactive.startingNow()
            let ready = try await core.value
            let quality = QualityChoice(requested: p.quality, productType: p.productType, policy: ready.gate.policy)
            return try await ready.products.preloadLicense(
                productId: p.productId, productType: p.productType,
                quality: quality, terms: terms, properties: properties, retry: retry)
        }
        router.register("offline.renewLicense", params: RenewParams.self) { p, _ in
            let terms = try LicenseTerms.from(rentalSeconds: p.rentalSeconds, purchase: p.purchase)
            let retry = RetryPolicy.interactive.startingNow()
            return try await core.value.products.renewLicense(token: p.token, terms: terms, retry: retry)
        }
        router.register("offline.add", params: AddParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            if let quality = p.quality { try checkId(quality, field: "quality") }
            let terms = try LicenseTerms.from(rentalSeconds: p.rentalSeconds, purchase: p.purchase)
            let presentation = try presentationChoice(p)
            let properties = TokenProperties(
                displayName: try TokenProperties.checked(p.displayName, field: "displayName"),
                referenceId: try TokenProperties.checked(p.referenceId, field: "referenceId"))
            let retry = RetryPolicy.interactive.startingNow()
            let ready = try await core.value
            // Without its own quality, an item gets the policy's offline audio or video quality.
            let quality = QualityChoice(requested: p.quality, productType: p.productType, policy: ready.gate.policy)
            return try await ready.products.add(
                productId: p.productId, productType: p.productType, quality: quality,
                allowCellular: p.allowCellular ?? false, now: p.now ?? false, terms: terms,
                presentation: presentation, properties: properties, retry: retry)
        }
        router.register("offline.variants", params: VariantsParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            if let quality = p.quality { try checkId(quality, field: "quality") }
            let retry = RetryPolicy.interactive.startingNow()
            let ready = try await core.value
            let quality = p.quality ?? ready.gate.policy.offlineQuality(productType: "VIDEO")
            return try await ready.products.variants(productId: p.productId, quality: quality, retry: retry)
        }
        router.register("offline.status", params: TokenParams.self) { p, _ in
            try await core.value.products.status(token: p.token)
        }
        router.register("offline.list", params: ListParams.self) { p, _ in
            try await core.value.products.list(state: p.filter, sort: p.sort)
        }
        router.register("offline.state", params: ProductParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            let ready = try await core.value
            return try await ready.products.offlineState(productId: p.productId, now: await ready.trustedNow())
        }
        router.register("offline.pause", params: TokenParams.self) { p, _ in try await core.value.products.pause(token: p.token) }
        router.register("offline.resume", params: TokenParams.self) { p, _ in try await core.value.products.resume(token: p.token) }
        router.register("offline.cancel", params: TokenParams.self) { p, _ in try await core.value.products.cancel(token: p.token) }
        router.register("offline.delete", params: TokenParams.self) { p, _ in try await core.value.products.delete(token: p.token) }
        router.register("offline.deleteAll", params: Empty.self) { _, _ in try await core.value.products.deleteAll() }
        router.register("offline.estimate", params: EstimateParams.self) { p, _ in
            let ids = (p.productId.map { [$0] } ?? []) + (p.productIds ?? [])
            guard !ids.isEmpty, ids.count <= 500 else {
                throw RPCError.invalidParams("params.productId or params.productIds (1…500 ids) is needed.")
            }
            for (i, id) in ids.enumerated() { try checkId(id, field: p.productId != nil && i == 0 ? "productId" : "productIds[\(i)]") }
            if let quality = p.quality { try checkId(quality, field: "quality") }
            let retry = RetryPolicy.interactive.startingNow()
            return try await core.value.estimate.run(productIds: ids, productType: p.productType, quality: p.quality, retry: retry)
        }
        // The persisted policy and the network as the policy sees it.
        router.register("policy.get", params: Empty.self) { _, _ in await (try await core.value).policy.getPolicy() }
        router.register("policy.set", params: JSONValue.self) { p, _ in try await core.value.policy.setPolicy(p) }
        router.register("network.get", params: Empty.self) { _, _ in await (try await core.value).policy.getNetwork() }
        router.register("network.set", params: PolicyController.NetworkParams.self) { p, _ in
            try await core.value.policy.setNetwork(p)
        }
    }

    /// `bitrate` a whole number of bits per second; languages at most 16 tags of `[A-Za-z0-9-]{1,35}`.
    static func presentationChoice(_ p: AddParams) throws -> OfflineProducts.PresentationChoice {
        var choice = OfflineProducts.PresentationChoice()
        if let bitrate = p.bitrate {
            guard bitrate.rounded() == bitrate, bitrate >= 1, bitrate <= 1e12 else {
                throw RPCError.invalidParams("params.bitrate must be a whole number of bits per second (1 or more).")
            }
            choice.bitrate = Int(bitrate)
        }
        for (field, languages) in [("audioLanguages", p.audioLanguages), ("subtitleLanguages", p.subtitleLanguages)] {
            guard let languages else { continue }
            guard languages.count <= 16,
                languages.allSatisfy({ tag in
                    (1...35).contains(tag.utf8.count)
                        && tag.utf8.allSatisfy { $0 == 45 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
                })
            else {
                throw RPCError.invalidParams("params.\(field) must be at most 16 language tags (none: no rendition) such as \"fr\" or \"en-GB\".")
            }
            if field == "audioLanguages" { choice.audioLanguages = languages } else { choice.subtitleLanguages = languages }
        }
        return choice
    }

    static func checkId(_ value: String, field: String) throws {
        guard OriginID.isValid(value) else { throw DownloaderError.badParam(field, value) }
    }
}
