import Foundation
import OriginClient
import Wire

/// What `offline.add`, `offline.estimate` and a re-offline plan from an offline playbackinfo:
/// the presentation chosen, the files to download, or why the product cannot be offlined.
extension OfflineProducts {
    /// What `offline.add` chooses of an HLS presentation (`HLSChoice`); empty for the defaults.
    struct PresentationChoice: Sendable {
        var bitrate: Int?
        var audioLanguages: [String]?
        var subtitleLanguages: [String]?
        var isEmpty: Bool { firstField == nil }
        /// The first field given, for a refusal that names it.
        var firstField: String? {
            bitrate != nil ? "bitrate" : audioLanguages != nil ? "audioLanguages" : subtitleLanguages != nil ? "subtitleLanguages" : nil
        }
    }

    /// The offline playbackinfo at `choice.first`, asked again at the video quality when the
    /// answer says the product is a video the request did not name (`QualityChoice`).
    static func offlinePlaybackInfo(
        _ productId: String, choice: QualityChoice, origin: OriginClient,
        retry: RetryPolicy
    ) async throws -> (JSONValue, String) {
        let info = try await offlinePlaybackInfo(productId, quality: choice.first, origin: origin, retry: retry)
        guard let again = choice.again(after: info) else { return (info, choice.first) }
        return (try await offlinePlaybackInfo(productId, quality: again, origin: origin, retry: retry), again)
    }

    /// `GET /v1/playbackinfo/{productId}?mode=offline` at `quality` (`HIGH` when none is named;
    /// the methods pass the policy's offline quality).
    static func offlinePlaybackInfo(
        _ productId: String, quality: String?, origin: OriginClient,
        retry: RetryPolicy
    ) async throws -> JSONValue {
        try await origin.get("/v1/playbackinfo/\(productId)", query: ["mode": "offline", "quality": quality ?? "HIGH"], retry: retry)
    }

    /// Every file `offline.add` downloads for an HLS playbackinfo with `choice`: the master
    /// playlist, the chosen playlists, segments and init sections, and the images.
    static func presentationFiles(
        _ info: JSONValue, productId: String, origin: OriginClient, choice: PresentationChoice,
        retry: RetryPolicy
    ) async throws -> [PlannedFile] {
        let actual = info["productId"]?.stringValue ?? productId
        guard OriginID.isValid(actual) else {
            throw DownloaderError.hostileManifest("the actual product id \(actual.prefix(140).debugDescription) is not a plain token")
        }
        let planner = HLSPlanner(origin: origin)
        let plan = try await planner.plan(
            productId: actual, info: info, bitrate: choice.bitrate, audioLanguages: choice.audioLanguages,
            subtitleLanguages: choice.subtitleLanguages, retry: retry)
        return [plan.master] + plan.files + (try planner.images(productId: actual, info: info))
    }

    /// A progressive product's images (`HLSPlanner.images`): the one plan `offline.add`,
    /// `offline.estimate` and a re-offline share.
    static func progressiveImages(productId: String, info: JSONValue, origin: OriginClient) throws -> [PlannedFile] {
        try HLSPlanner(origin: origin).images(productId: productId, info: info)
    }

    /// What `offline.add` downloads for this offline playbackinfo, or why it refuses it:
    /// `offline.estimate` asks the same, so the two agree on what can be downloaded.
    static func offlineItem(
        _ info: JSONValue, productId: String, productType: String?,
        origin: OriginClient
    ) -> Result<ManifestItem, DownloaderError> {
        guard info["canBeDownloaded"]?.boolValue == true else { return .failure(.notDownloadable(productId)) }
        let manifestType = info["manifestType"]?.stringValue ?? "progressive"
        guard manifestType == "progressive" else {
            return .failure(.notSupported("\(productId) is delivered as \(manifestType); only progressive files can be offlined so far."))
        }
        let actual = info["productId"]?.stringValue ?? productId
        guard OriginID.isValid(actual) else {
            return .failure(.hostileManifest("the actual product id \(actual.prefix(140).debugDescription) is not a plain token"))
        }
        switch HostileInput.item(id: JSONValue.string(actual), fileFields: info["manifest"], meta: info, origin: origin) {
        case .success(var item):
            item.productType = info["productType"]?.stringValue ?? productType ?? "TRACK"
            return .success(item)
        case .failure(let refusal):
            return .failure(.hostileManifest(refusal.reason))
        }
    }
}
