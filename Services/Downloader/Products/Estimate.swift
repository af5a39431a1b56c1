import Foundation
import OriginClient
import Wire

/// `offline.estimate` (Brightcove's estimateSize): what offlining these products would take
/// and what the policy leaves room for. Sizes come from the origin's offline playbackinfo at
/// the quality `offline.add` would use, and from the playlists of an HLS presentation; a file
/// whose size only its `GET` would tell (a segment, an image) and that the catalog does not
/// know counts for what the plan expects of it (`UnknownSizes`: a presentation's
/// `BANDWIDTH` × duration), and the product's `sizeKnown` is false. What is already on disk
/// (verified, or the `.part` of an unfinished download) is not counted again. A product is `canBeDownloaded` exactly when
/// `offline.add` would take it (`OfflineProducts.offlineItem`); one it would refuse carries the
/// error `offline.add` would answer (`error`, `reason`). Nothing is written.
struct Estimate: Sendable {
    let files: FileStore
    let origin: OriginClient?
    let gate: PolicyGate
    let store: MediaFolder

    func run(productIds: [String], productType: String?, quality: String?, retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let policy = gate.policy
        // Without its own quality a product gets the policy's, as in `offline.add`.
        let choice = QualityChoice(requested: quality, productType: productType, policy: policy)
        var items: [JSONValue] = []
        var needed: Int64 = 0
        var seenFiles = Set<String>()
        let room = await gate.budget.room(policy: policy, running: []).room
        for productId in productIds {
            let refusal: (name: String, message: String)
            do {
                let (info, _) = try await OfflineProducts.offlinePlaybackInfo(productId, choice: choice, origin: origin, retry: retry)
                // An HLS presentation: what `offline.add` would download with the default choice,
                // planned the same way (its playlists read, its segments sized).
                if info["manifestType"]?.stringValue == "hls", info["canBeDownloaded"]?.boolValue == true {
                    do {
                        let files = try await OfflineProducts.presentationFiles(
                            info, productId: productId, origin: origin,
                            choice: .init(), retry: retry)
                        var size: Int64 = 0, onDisk: Int64 = 0, unknown = 0
                        for file in files where seenFiles.insert(file.urlPath).inserted {
                            let held = try await self.files.file(urlPath: file.urlPath)
                            guard let fileSize = file.sizeBytes ?? held?.sizeBytes else {
                                unknown += 1
                                continue
                            }
                            size += fileSize
                            if let held, held.isVerified { onDisk += fileSize }
                        }
                        size += UnknownSizes(files).bytes(unknown: unknown)
                        needed += size - onDisk
                        items.append([
                            "productId": .string(productId), "sizeBytes": .number(Double(size)),
                            "onDiskBytes": .number(Double(onDisk)), "neededBytes": .number(Double(size - onDisk)),
                            "sizeKnown": .bool(unknown == 0), "canBeDownloaded": true,
                        ])
                        continue
                    } catch let error as DownloaderError {
                        refusal = (error.name, error.message)
                        items.append([
                            "productId": .string(productId), "sizeBytes": .null, "onDiskBytes": 0, "neededBytes": 0,
                            "canBeDownloaded": false, "error": .string(refusal.name), "reason": .string(refusal.message),
                        ])
                        continue
                    }
                }
                switch OfflineProducts.offlineItem(info, productId: productId, productType: productType, origin: origin) {
                case .success(let item):
                    // The file and its images, as `offline.add` would list them (an image whose
                    // URL it refuses refuses the product there, so it does here). An image of
                    // unknown size counts for the size the catalog learned, or for the plan's guess.
                    let images: [PlannedFile]
                    do {
                        images = try OfflineProducts.progressiveImages(productId: item.id, info: info, origin: origin)
                    } catch let error as DownloaderError {
                        refusal = (error.name, error.message)
                        break
                    }
                    var listed: [(urlPath: String, sizeBytes: Int64)] = [(item.urlPath, item.sizeBytes)]
                    var unknown = 0
                    for image in images {
                        var known = image.sizeBytes
                        if known == nil { known = try await files.file(urlPath: image.urlPath)?.sizeBytes }
                        if let known {
                            listed.append((image.urlPath, known))
                        } else {
                            unknown += 1
                            listed.append((image.urlPath, UnknownSizes(images).bytes(unknown: 1)))
                        }
                    }
                    // As `offline.status` counts them: the unknown ones together.
                    let size =
                        listed.reduce(0) { $0 + $1.sizeBytes } - Int64(unknown) * UnknownSizes(images).bytes(unknown: 1)
                        + UnknownSizes(images).bytes(unknown: unknown)
                    var onDisk: Int64 = 0, need: Int64 = 0
                    for file in listed {
                        let weighed = try await weigh(urlPath: file.urlPath, sizeBytes: file.sizeBytes, seenFiles: &seenFiles, room: room)
                        onDisk += weighed.onDisk
                        need += weighed.needed
                    }
                    needed += need
                    items.append([
                        "productId": .string(productId), "sizeBytes": .number(Double(size)),
                        "onDiskBytes": .number(Double(onDisk)), "neededBytes": .number(Double(need)),
                        "sizeKnown": .bool(unknown == 0), "canBeDownloaded": true,
                    ])
                    continue
                case .failure(let error):
                    refusal = (error.name, error.message)
                }
            } catch let error as OriginError where error.refusesProduct {
                // This product's own refusal (geo, subscription, unknown): the others are still weighed.
                refusal = (error.name, error.message)
            }
            items.append([
                "productId": .string(productId), "sizeBytes": .null, "onDiskBytes": 0, "neededBytes": 0,
                "canBeDownloaded": false, "error": .string(refusal.name), "reason": .string(refusal.message),
            ])
        }
        return [
            "items": .array(items), "bytesNeeded": .number(Double(needed)), "bytesAvailable": .number(Double(room.available)),
            "fits": .bool(needed <= room.available), "freeBytes": .number(Double(room.freeBytes)),
            "minFreeBytes": .number(Double(room.minFreeBytes)), "cacheUsedBytes": .number(Double(room.cacheUsedBytes)),
            "maxCacheBytes": room.maxCacheBytes.map { .number(Double($0)) } ?? .null,
        ]
    }

    /// What one file of a progressive product (its main file or an image) holds already and
    /// still needs; a file already counted for an earlier product of the call needs nothing more.
    private func weigh(
        urlPath: String, sizeBytes: Int64, seenFiles: inout Set<String>,
        room: StorageBudget.Room
    ) async throws -> (onDisk: Int64, needed: Int64) {
        let onDisk: Int64
        if let known = try await files.file(urlPath: urlPath) {
            onDisk = known.isVerified && known.sizeBytes == sizeBytes ? sizeBytes : await store.partSize(known.localPath)
        } else {
            onDisk = 0
        }
        let held = min(onDisk, sizeBytes)
        let need = seenFiles.insert(urlPath).inserted ? room.need(size: sizeBytes, onDisk: held) : 0
        return (held, need)
    }
}
