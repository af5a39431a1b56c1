import Foundation
import Logging
import StateDB
import Wire

/// What transfers mean for the products waiting for their files: a product becomes
/// `downloading` when its first file starts (`OfflineStarted` once per token), follows its
/// files' progress (`OfflineProgress`), and becomes `cached`, `partiallyCached` or `failed`
/// as its files end.
struct ProductTransfers: Sendable {
    let queue: DownloadQueueStore
    let events: DownloaderEvents
    let logger: Logger

    /// Products waiting for this file become `downloading`; the ones already so are returned as
    /// they are. `mayHaveChanged`: something happened since the queue said whether a product
    /// waits. `keepOriginWaits`: the transfer only starts (`DownloadQueueStore.startProducts`);
    /// `heldForOrigin` then says a product stays `idle` with the origin's error until bytes arrive.
    func start(_ job: FileJob, mayHaveChanged: Bool, keepOriginWaits: Bool) async -> (owners: [ProductRef], heldForOrigin: Bool) {
        let changed: [ProductRef]
        let owners: [ProductRef]
        var held = false
        do {
            // Most files (station items) have no product waiting: the queue's answer spares them
            // a write transaction, and a read when nothing changed since.
            guard job.productWaits || mayHaveChanged else { return ([], false) }
            guard try await queue.productWaits(for: job.fileId) else { return ([], false) }
            if job.listed, let started = try await queue.productsAlreadyStarted(waitingFor: job.fileId) {
                (owners, changed) = (started, [])
            } else {
                (owners, changed, held) = try await queue.startProducts(
                    waitingFor: job.fileId, now: Date(),
                    keepOriginWaits: keepOriginWaits)
            }
        } catch {
            logger.error("cannot mark \(job.relative) started: \(error)")
            return ([], false)
        }
        for owner in changed {
            events.publish(.offlineStarted(owner))
            events.publish(.itemStateChanged(.product(owner), state: "downloading"))
        }
        return (owners, held)
    }

    /// A file no longer waits on a failing origin: its items drop that error.
    func clearOriginWait(_ job: FileJob) async {
        _ = try? await queue.clearOriginWait(fileId: job.fileId)
    }

    /// A product's own file holds `bytes`: `OfflineProgress` over all the product's files when
    /// it has others (a progressive product's images), as `offline.status` counts them. A
    /// product's listed files (an HLS presentation's) report once each is verified instead.
    func progressed(_ job: FileJob, bytes: Int64, owners: [ProductRef]) async {
        guard !job.listed else { return }
        for owner in owners {
            if let totals = try? await queue.productTotals(productId: owner.productId, mainFileId: job.fileId, mainBytes: bytes) {
                events.publish(.offlineProgress(owner, totals: totals))
            } else {
                events.publish(.fileProgress(owner, bytesOnDisk: bytes, sizeBytes: job.sizeBytes))
            }
        }
    }

    /// A file was verified: the products it completed, or moved on.
    func verified(_ verified: DownloadQueueStore.Verified) {
        for product in verified.products {
            events.publish(.offlineDone(product))
            events.publish(.itemStateChanged(.product(product), state: "cached"))
        }
        for product in verified.partial {
            events.publish(.itemStateChanged(.product(product), state: "partiallyCached"))
        }
        for (product, totals) in verified.progressed {
            events.publish(.offlineProgress(product, totals: totals))
        }
    }

    /// A failed attempt: the products that failed for good with it.
    func failed(_ failure: DownloadQueueStore.FailedAttempt) {
        for product in failure.products {
            events.publish(
                .offlineFailed(
                    product, error: ItemError.downloadFailed.rawValue, cause: failure.error,
                    reason: product.reason ?? failure.reason))
            events.publish(.itemStateChanged(.product(product), state: "failed", error: ItemError.downloadFailed.rawValue))
        }
    }
}
