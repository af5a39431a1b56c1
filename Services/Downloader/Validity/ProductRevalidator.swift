import Foundation
import Logging
import OriginClient
import StateDB
import Wire

/// TIDAL "Re-validation of offlined media products": for every product past its
/// `offlineRevalidateAt` (at the trusted time), the playbackinfo request it was offlined with is
/// made again, for the *requested* id.
///
/// - Same `manifestHash`: only the validity and, where the product is licensed, the license are
///   refreshed; nothing is downloaded.
/// - Another `manifestHash`: the new file is staged beside the old one (`offlineProducts.staged`,
///   a queue row of the token), and only once it is verified does one transaction point the
///   product at it; the old file is deleted after that commit. Until then the old one plays.
///   An HLS presentation is planned again with the choice made at `offline.add` (bitrate,
///   languages), every file of it staged in a folder of its own and its keys fetched under the
///   new license; the swap waits for all of them. Any product's images (a progressive one's
///   too) are staged the same way and swapped with the rest.
/// - Any failure: nothing changes and the product is tried again next round. Content is never
///   deleted here (only `offline.delete` does that); a product nobody could re-validate before
///   its `offlineValidUntil` answers OFFLINED_BUT_NOT_VALID and is still re-validated.
///
/// A kill -9 at any point leaves the old product or the new one, never a mix: the staging is a
/// catalog row, the download resumes like any other, and `promoteReady` at start finishes a swap
/// whose file was verified just before the kill.
actor ProductRevalidator {
    /// What one product's re-validation came to, as `sync.now` and the events report it.
    struct Outcome: Sendable {
        enum Result: String, Sendable {
            /// Same manifest: validity (and license) refreshed.
            case unchanged
            /// New manifest: its file is downloading; the old one still plays.
            case staged
            /// New manifest, file verified, product switched to it.
            case replaced
            /// Nothing changed; tried again next round.
            case failed
        }
        var token: String
        var productId: String
        var result: Result
        var error: String?

        var json: JSONValue {
            var fields: [String: JSONValue] = [
                "token": .string(token), "productId": .string(productId),
                "result": .string(result.rawValue),
            ]
            if let error { fields["error"] = .string(error) }
            return .object(fields)
        }
    }

    /// One round gives up on a failing origin quickly: the next round is the retry (TIDAL).
    static let retry = RetryPolicy(statusRetries: 1, baseDelay: 0.2, maxStatusDelay: 1, networkRetries: 0, maxNetworkDelay: 0)

    private let revalidations: RevalidationStore
    private let licenseStore: LicenseStore
    private let origin: OriginClient?
    private let licenses: LicenseClient?
    private let store: MediaFolder
    private let engine: DownloadEngine
    private let events: DownloaderEvents
    private let clock: TrustedTimeRecorder
    private let logger: Logger

    init(
        catalog: StateDB, origin: OriginClient?, licenses: LicenseClient?, store: MediaFolder, engine: DownloadEngine,
        events: DownloaderEvents, clock: TrustedTimeRecorder, logger: Logger
    ) {
        self.revalidations = RevalidationStore(catalog: catalog)
        self.licenseStore = LicenseStore(catalog: catalog)
        self.origin = origin
        self.licenses = licenses
        self.store = store
        self.engine = engine
        self.events = events
        self.clock = clock
        self.logger = logger
    }

    // MARK: Rounds

    /// Re-validates every offlined product that is due. Products are done one after another:
    /// rounds are rare and small, and one failing product must not hold up the others. With a
    /// `deadline` (someone waits for the answer), every origin request ends by it, and a product
    /// whose turn comes after it fails as `OriginUnreachable` without asking.
    func round(within deadline: CallDeadline? = nil) async -> [Outcome] {
        let now = await clock.now()
        let due: [RevalidationStore.Due]
        do {
            due = try await revalidations.due(at: now)
        } catch {
            logger.error("cannot list products to re-validate: \(error)")
            return []
        }
        var outcomes: [Outcome] = []
        for row in due {
            outcomes.append(
                await revalidate(
                    token: row.token, requestedProductId: row.requestedProductId, productId: row.productId,
                    deadline: deadline))
        }
        if !due.isEmpty {
            let counts = Dictionary(grouping: outcomes, by: \.result.rawValue).mapValues(\.count)
            logger.info("re-validation round: \(due.count) due, \(counts)")
        }
        return outcomes
    }

    private func revalidate(token: String, requestedProductId: String, productId: String, deadline: CallDeadline?) async -> Outcome {
        do {
            let result = try await revalidateOrThrow(token: token, requestedProductId: requestedProductId, deadline: deadline)
            // A swap announces itself (it may also happen later, when the engine verifies the file).
            if result != .replaced {
                events.publish(.offlineRevalidated(ProductRef(token: token, productId: productId), result: result.rawValue))
            }
            return Outcome(token: token, productId: productId, result: result)
        } catch is CancellationError {
            // Cut off by the stop: nothing changed and nothing failed; the next round re-validates it.
            return Outcome(token: token, productId: productId, result: .failed, error: "Cancelled")
        } catch {
            let name = (error as? any RPCErrorConvertible)?.rpcError.name ?? "RevalidationFailed"
            let message = "\(error)"
            logger.info("re-validation of \(requestedProductId) (\(token)) failed, nothing changed: \(message)")
            _ = try? await revalidations.recordFailure(token: token, error: "\(name): \(message)")
            events.publish(.revalidationFailed(ProductRef(token: token, productId: productId), error: name, reason: message))
            return Outcome(token: token, productId: productId, result: .failed, error: name)
        }
    }

    private func revalidateOrThrow(token: String, requestedProductId: String, deadline: CallDeadline?) async throws -> Outcome.Result {
        guard let origin, let licenses else { throw DownloaderError.noOrigin() }
        if let deadline, deadline.hasPassed {
            throw OriginError(
                name: RPCErrorKind.originUnreachable.name,
                message: "the time to answer ran out before this product's turn; the next round re-validates it")
        }
        let current = try await revalidations.held(token: token)
        guard let current else { throw DownloaderError.unknownToken(token) }
        // The identical request as when offlined: the requested id, offline mode, the same quality.
        let info = try await origin.get(
            "/v1/playbackinfo/\(requestedProductId)",
            query: ["mode": "offline", "quality": current.quality ?? "HIGH"],
            retry: deadline?.bounding(Self.retry) ?? Self.retry)
        guard info["canBeDownloaded"]?.boolValue == true else { throw DownloaderError.notDownloadable(requestedProductId) }
        let manifestType = info["manifestType"]?.stringValue ?? "progressive"
        guard manifestType == "progressive" || manifestType == "hls" else {
            throw DownloaderError.notSupported("\(requestedProductId) is now delivered as \(manifestType)")
        }
        guard let hash = info["manifestHash"]?.stringValue, !hash.isEmpty else {
            throw DownloaderError.hostileManifest("the playbackinfo of \(requestedProductId) has no manifestHash")
        }
        let validity = Validity(info)
        // A licensed product gets a new license in the same round (TIDAL: licenseSecurityToken;
        // Brightcove: the terms it was licensed with).
        let terms = try await licenseStore.currentTerms(token: token)
        func freshLicense() async throws -> GrantedLicense? {
            guard terms != nil || LicenseClient.securityToken(info) != nil else { return nil }
            return try await licenses.request(
                productId: requestedProductId, playbackInfo: info, terms: terms ?? .purchase,
                retry: deadline?.bounding(.offlining) ?? .offlining)
        }

        if hash == current.manifestHash {
            let license = try await freshLicense()
            // The origin went back to what is held: a re-offline under way is no longer wanted.
            let dropped = try await revalidations.refresh(
                token: token, validity: validity, license: license,
                requestedProductId: requestedProductId)
            await engine.discard(dropped)
            return .unchanged
        }

        if let previous = current.staged, previous.manifestHash == hash {
            // Already staging this manifest: make sure its files are still wanted (a file that
            // gave up starts over), and let the engine go on.
            try await revalidations.keepStaging(fileIds: previous.fileIds, token: token, now: Date())
            return try await promote(token: token) ? .replaced : .staged
        }
        var item: ManifestItem
        let files: [PlannedFile]
        var keyIds: [String] = []
        let mark = String(hash.prefix(12))
        if manifestType == "hls" {
            (item, files, keyIds) = try await planPresentation(
                requestedProductId, info: info, options: current.options,
                mark: mark, origin: origin,
                retry: deadline?.bounding(.offlining) ?? .offlining)
        } else {
            switch HostileInput.item(
                id: info["productId"] ?? .string(requestedProductId), fileFields: info["manifest"], meta: info,
                origin: origin)
            {
            case .success(let parsed): item = parsed
            case .failure(let refusal): throw DownloaderError.hostileManifest(refusal.reason)
            }
            files = try planImages(item.id, info: info, mark: mark, origin: origin)
        }
        item.productType = info["productType"]?.stringValue ?? "TRACK"
        var license = try await freshLicense()
        if !keyIds.isEmpty {
            // The new presentation's keys, fetched under the new license as `offline.add` does.
            guard var granted = license else {
                throw DownloaderError.hostileManifest("\(requestedProductId) is encrypted but its playbackinfo asks for no license")
            }
            for keyId in keyIds where granted.keys[keyId] == nil {
                granted.keys[keyId] = try await licenses.fetchKey(keyId, licenseId: granted.id, retry: deadline?.bounding(.offlining) ?? .offlining)
            }
            license = granted
        }
        let now = Date()
        let dropped = try await revalidations.stage(
            token: token, manifestHash: hash, item: item, files: files, validity: validity,
            license: license, requestedProductId: requestedProductId, now: now)
        await engine.discard(dropped)
        logger.info("\(requestedProductId) (\(token)) has a new manifest: re-offlining \(item.id) beside the old file")
        // TIDAL: the offline messages are sent for re-validations too.
        events.publish(.offlineStarted(ProductRef(token: token, productId: item.id), revalidation: true))
        return try await promote(token: token) ? .replaced : .staged
    }

    // MARK: The swap

    /// Finishes every staged re-offline whose file is verified: at start (a kill between the
    /// file's commit and the swap) and after the engine verified a file.
    func promoteReady() async {
        do {
            let tokens = try await revalidations.stagedTokens()
            for token in tokens { _ = try await promote(token: token) }
        } catch {
            logger.error("cannot finish staged re-offlines: \(error)")
        }
    }

    /// Called with a file the committer just verified; cheap when no re-offline waits for it.
    func fileVerified(_ fileId: Int64) async {
        let waiting = (try? await revalidations.stagingWaits(for: fileId)) ?? false
        if waiting { await promoteReady() }
    }

    /// Points the product at its staged file in one transaction once that file is verified, then
    /// deletes the old file. Returns whether it switched.
    private func promote(token: String) async throws -> Bool {
        let now = Date()
        guard let switched = try await revalidations.swap(token: token, now: now) else { return false }
        await engine.discard(switched.garbage)
        logger.info("re-offline of \(token) committed: now \(switched.productId); \(switched.garbage.count) old file(s) deleted")
        let product = ProductRef(token: token, productId: switched.productId)
        events.publish(.offlineDone(product, revalidation: true))
        events.publish(.offlineRevalidated(product, result: Outcome.Result.replaced.rawValue))
        return true
    }
}
