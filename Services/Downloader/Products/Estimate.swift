import Foundation
import OriginClient
import Wire

/// `offline.estimate` (Brightcove's estimateSize): what offlining these products would take
/// and what the policy leaves room for. Sizes come from the origin's offline playbackinfo at
/// the quality `offline.add` would use; what is already on disk (verified, or the `.part` of
/// an unfinished download) is not counted again. Nothing is written.
struct Estimate: Sendable {
    let files: FileStore
    let origin: OriginClient?
    let gate: PolicyGate
    let store: MediaStore

    func run(productIds: [String], quality: String?, retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let policy = gate.policy
        var items: [JSONValue] = []
        var needed: Int64 = 0
        var seenFiles = Set<String>()
        let room = await gate.budget.room(policy: policy, running: []).room
        for productId in productIds {
            let info = try await origin.get("/v1/playbackinfo/\(productId)",
                                            query: ["mode": "offline", "quality": quality ?? policy.offlineQuality(productType: nil)],
                                            retry: retry)
            let actual = info["productId"]?.stringValue ?? productId
            let canDownload = info["canBeDownloaded"]?.boolValue == true
            guard canDownload, case .success(let item) = HostileInput.item(id: .string(actual), fileFields: info["manifest"],
                                                                          meta: info, origin: origin) else {
                items.append(["productId": .string(productId), "sizeBytes": .null, "onDiskBytes": 0, "neededBytes": 0,
                              "canBeDownloaded": .bool(canDownload),
                              "note": .string(canDownload ? "the origin's manifest is unusable" : "not downloadable")])
                continue
            }
            let sizeBytes = item.sizeBytes
            let urlPath = item.urlPath
            let onDisk: Int64
            if let known = try await files.file(urlPath: urlPath) {
                if known.isVerified, known.sizeBytes == sizeBytes {
                    onDisk = sizeBytes
                } else {
                    onDisk = await store.partSize(known.localPath)
                }
            } else {
                onDisk = 0
            }
            let need = seenFiles.insert(urlPath).inserted ? room.need(size: sizeBytes, onDisk: min(onDisk, sizeBytes)) : 0
            needed += need
            items.append(["productId": .string(productId), "sizeBytes": .number(Double(sizeBytes)),
                          "onDiskBytes": .number(Double(min(onDisk, sizeBytes))), "neededBytes": .number(Double(need)),
                          "canBeDownloaded": true])
        }
        return ["items": .array(items), "bytesNeeded": .number(Double(needed)), "bytesAvailable": .number(Double(room.available)),
                "fits": .bool(needed <= room.available), "freeBytes": .number(Double(room.freeBytes)),
                "minFreeBytes": .number(Double(room.minFreeBytes)), "cacheUsedBytes": .number(Double(room.cacheUsedBytes)),
                "maxCacheBytes": room.maxCacheBytes.map { .number(Double($0)) } ?? .null]
    }
}
