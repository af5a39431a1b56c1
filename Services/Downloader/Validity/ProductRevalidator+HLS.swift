import OriginClient
import Wire

extension ProductRevalidator {
    /// A changed HLS presentation, planned again with the choice made at `offline.add` (kept in
    /// `offlineProducts.options`: bitrate asked for, audio and subtitle languages), every file
    /// given its staged place (`PlannedFile.staged(mark:)`). Returns the master playlist's item, the
    /// other files and the key ids the new segments need.
    func planPresentation(
        _ requestedProductId: String, info: JSONValue, options: String?, mark: String, origin: OriginClient,
        retry: RetryPolicy
    ) async throws -> (item: ManifestItem, files: [PlannedFile], keyIds: [String]) {
        let actual = info["productId"]?.stringValue ?? requestedProductId
        guard OriginID.isValid(actual) else {
            throw DownloaderError.hostileManifest("the actual product id \(actual.prefix(140).debugDescription) is not a plain token")
        }
        let choice = options.flatMap { try? JSONValue.parse(Array($0.utf8)) }
        let languages = { (field: String) in choice?[field]?.arrayValue?.compactMap(\.stringValue) }
        let planner = HLSPlanner(origin: origin)
        let plan = try await planner.plan(
            productId: actual, info: info, bitrate: choice?["bitrate"]?.intValue,
            audioLanguages: languages("audioLanguages"), subtitleLanguages: languages("subtitleLanguages"),
            retry: retry)
        let master = plan.master.staged(mark: mark)
        var item = try planner.masterItem(master, productId: actual, info: info)
        item.urlPath = master.urlPath
        let images = try planner.images(productId: actual, info: info)
        return (item, (plan.files + images).map { $0.staged(mark: mark) }, plan.keyIds)
    }

    /// A changed progressive product's images (`images` of its new playbackinfo), each given its
    /// staged place as a presentation's files are, so the swap moves them with the file and
    /// collects the held ones; none when the playbackinfo names none (the swap drops the held).
    func planImages(_ actual: String, info: JSONValue, mark: String, origin: OriginClient) throws -> [PlannedFile] {
        try OfflineProducts.progressiveImages(productId: actual, info: info, origin: origin).map { $0.staged(mark: mark) }
    }
}
