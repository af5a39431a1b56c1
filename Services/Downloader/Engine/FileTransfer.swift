import BlockingIO
import Foundation
import Glibc
import HTTPClient
import NIOConcurrencyHelpers
import OriginClient

/// One file to fetch, as the queue hands it out.
struct FileJob: Sendable, Equatable {
    var fileId: Int64
    /// As stored: relative to the origin (an earlier version's absolute URL is moved onto the
    /// configured origin when fetched).
    var url: String
    var relative: String
    /// The declared size; with `sizeIsEstimate`, what the storage admission counts the file
    /// for until its `GET` tells the size (then the length that `GET` announced is checked).
    var sizeBytes: Int64
    /// nil for a file the origin declares no checksum for (an HLS segment, an image): its size
    /// is checked.
    var sha256: String?
    /// Whether an `offline.add` token waited for the file when the queue handed it out.
    var productWaits = true
    /// A file listed in `productFiles` (an HLS presentation's, or any product's image) or an HLS
    /// master playlist: no progress of its own is reported (a presentation's comes per verified
    /// file, for the product as a whole).
    var listed = false
    /// What its `.part` held when admission looked (0: none), nil when nobody looked.
    var partBytes: Int64? = nil
    /// No size was declared (`files.sizeBytes` null: a segment or an image, planned without
    /// asking the origin): `sizeBytes` is an estimate.
    var sizeIsEstimate = false

    /// The size the transfer holds the file to before its `GET` answers: nil while unknown.
    var declaredSize: Int64? { sizeIsEstimate ? nil : sizeBytes }

    /// This job with what admission found in its `.part`.
    func withPart(_ bytes: Int64?) -> FileJob {
        var job = self
        job.partBytes = bytes
        return job
    }
}

/// How one attempt ended.
enum TransferResult: Sendable, Equatable {
    /// `<relative>.part` holds exactly the declared bytes with the declared SHA-256; `sizeBytes`
    /// is its length (for a file of unknown size, the length its `GET` announced).
    case complete(sizeBytes: Int64)
    /// The attempt counts as failed and its content was removed: `error` is the stable name.
    case refused(error: String, reason: String)
    /// The origin did not answer usefully (no connection, a timeout, 5xx or 429 after the
    /// retries below: `NetworkError`), its TLS edge was refused (`TLSFailed`) or it refused the
    /// credentials (`Unauthorized`): not the file's fault, so no attempt counts and the `.part` stays.
    case originFailing(error: String, reason: String)
}

extension RetryPolicy {
    /// One file's transfer: a few quick retries, then the engine takes over with a backoff of
    /// its own and reports the item Idle (`NetworkError`) meanwhile, instead of showing it
    /// `downloading` while the origin is down. Bytes that move reset the network count, so a
    /// slow but alive link is never given up on.
    static let fileTransfer = RetryPolicy(statusRetries: 2, maxStatusDelay: 2, networkRetries: 2, maxNetworkDelay: 2)
}

/// Fetches one file into `<relative>.part`, resuming with `Range` from what is on disk (after a
/// crash, a restart or a dropped connection), hashing as the bytes arrive, and checking size and
/// SHA-256 against the manifest. It never renames: `DurableCommitter` does the durable steps.
struct FileTransfer: Sendable {
    let origin: OriginClient?
    let store: MediaFolder
    let stallTimeout: Double
    /// The download rate all transfers share (`maxBytesPerSecond`, or the open window's own).
    var receiveRate: ReceiveRate? = nil

    /// Throws `CancellationError` when the task is cancelled (pause, delete, shutdown); the
    /// bytes received stay in the `.part` file for the next attempt.
    ///
    /// `onReceived` is called (on the transfer thread) once a body arrived whole from the
    /// network, before its last bytes are in the file and before it is checked.
    ///
    /// `onSizeLearned` is called (on the transfer thread, once) when the `GET` of a file of
    /// unknown size announces more than the estimate it was admitted with.
    ///
    /// Runs on the engine's executor (`nonisolated(nonsending)`, as does the download below
    /// it): nothing here blocks, and a transfer's start and end skip a hop through the global
    /// pool each.
    nonisolated(nonsending)
        func run(
            _ job: FileJob, onBytes: @escaping @Sendable (Int64) -> Void,
            onReceived: (@Sendable () -> Void)? = nil,
            onSizeLearned: (@Sendable (Int64) -> Void)? = nil
        ) async throws -> TransferResult
    {
        guard let origin else { throw DownloaderError.noOrigin() }
        let part = try store.partPath(job.relative)
        let (onDisk, hasher): (Int64, StreamingSHA256)
        if job.partBytes == 0, job.relative.hasPrefix(MediaFolder.tracksFolder + "/") {
            // Admission has just found no `.part`, and `tracks/` exists from the start: nothing
            // to read or create, so no hop to the blocking pool (a station of many small files
            // paid one per file). Should a `.part` have appeared meanwhile, the download starts
            // from byte 0 and truncates it.
            (onDisk, hasher) = (
                0,
                StreamingSHA256(
                    path: part, declaredSize: job.declaredSize ?? HostileInput.maxFileBytes,
                    onReceived: onReceived)
            )
        } else {
            (onDisk, hasher) = try await Self.prepare(part, job, onReceived: onReceived)
        }
        onBytes(onDisk)

        // The file's length as the download left it (nil when nothing was downloaded), and the
        // length it must have: the declared one, or the one the `GET` announced.
        var received: Int64?
        var expected = job.declaredSize
        if onDisk < job.declaredSize ?? .max {
            let declared = job.declaredSize ?? HostileInput.maxFileBytes
            let learned = NIOLockedValueBox(false)
            do {
                let result = try await origin.download(
                    origin.mediaURL(job.url), to: part, resumeFrom: onDisk, retry: .fileTransfer,
                    stallTimeout: stallTimeout, observer: hasher,
                    receiveRate: receiveRate
                ) { fileSize, announced in
                    onBytes(fileSize)
                    if job.sizeIsEstimate, let announced, announced > job.sizeBytes,
                        learned.withLockedValue({ seen in
                            defer { seen = true }
                            return !seen
                        })
                    {
                        onSizeLearned?(announced)
                    }
                    // Past the declared size (or, for a file of unknown size, the length its
                    // `GET` announced) the body is not what was promised: stop now rather than
                    // fill the disk.
                    return fileSize <= min(declared, announced ?? declared) && !Task.isCancelled
                }
                if result.status == 416 {
                    // Nothing after the `.part`'s bytes: complete already when the origin's
                    // length is exactly theirs (a file of unknown size resumed after its body
                    // arrived whole), otherwise shorter than promised.
                    guard job.sizeIsEstimate, onDisk > 0, result.headers["content-range"].flatMap(Self.completeLength) == onDisk else {
                        let promised = expected.map { "the \($0) it declared" } ?? "the \(onDisk) the .part holds"
                        return await refuse(part, "SizeMismatch", "the origin has fewer bytes than \(promised)")
                    }
                    expected = onDisk
                } else {
                    received = result.fileSize
                    expected = expected ?? result.expectedSize ?? result.fileSize
                }
            } catch {
                if hasher.overflowed {
                    return await refuse(part, "BodyTooLong", "the origin sent more than the \(declared) bytes it declared")
                }
                if Task.isCancelled { throw CancellationError() }
                // A full disk is not the file's fault: keep the bytes, wait for space.
                if let shortage = StorageBudget.shortage(from: error) { throw shortage }
                if let origin = error as? OriginError {
                    if origin.isTLSFailure {
                        return .originFailing(error: PolicyBlock.tlsFailed.rawValue, reason: origin.message)
                    }
                    if origin.isOriginFailing {
                        let answer = origin.status.map { "HTTP \($0), " } ?? ""
                        return .originFailing(error: PolicyBlock.networkError.rawValue, reason: answer + origin.description)
                    }
                    if origin.isUnauthorized {
                        return .originFailing(error: origin.name, reason: origin.message)
                    }
                    return await refuse(part, origin.name, origin.message)
                }
                return await refuse(part, "DownloadFailed", "\(error)")
            }
        }
        // The digest may wait for the hashing thread of a large file: off the cooperative pool too.
        // A small file was hashed on the transfer thread and its length counted as written, so
        // it needs neither (a station of many small files would pay a thread hop per file).
        let (size, digest): (Int64, String)
        if let received, !hasher.hashesOnItsOwnThread {
            (size, digest) = (received, hasher.hexDigest())
        } else {
            (size, digest) = await BlockingIO.run { (MediaFolder.size(part) ?? 0, hasher.hexDigest()) }
        }
        let wanted = expected ?? size
        guard size == wanted, hasher.position == size else {
            return await refuse(
                part, size > wanted ? "BodyTooLong" : "SizeMismatch",
                "received \(size) bytes, the \(job.sizeIsEstimate ? "origin's answer" : "manifest") declared \(wanted)")
        }
        if job.sizeIsEstimate, size == 0 {
            return await refuse(part, "SizeMismatch", "the origin answered an empty body")
        }
        if let declared = job.sha256, digest != declared {
            return await refuse(part, "ChecksumMismatch", "SHA-256 \(digest) differs from the declared \(declared)")
        }
        return .complete(sizeBytes: size)
    }

    /// The complete length of `Content-Range: bytes */1234` (or `bytes 0-9/1234`); nil for `*`.
    static func completeLength(_ contentRange: String) -> Int64? {
        guard let slash = contentRange.lastIndex(of: "/") else { return nil }
        return Int64(contentRange[contentRange.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }

    /// Resuming hashes what the `.part` already holds: file I/O, off the cooperative pool.
    private static func prepare(
        _ part: String, _ job: FileJob,
        onReceived: (@Sendable () -> Void)?
    ) async throws -> (Int64, StreamingSHA256) {
        try await BlockingIO.run { () throws -> (Int64, StreamingSHA256) in
            // Presentations and images live in folders of their own (hls/<id>/v0/, images/<id>/).
            try MediaFolder.makeParentDirectories(of: part)
            var onDisk = MediaFolder.size(part) ?? 0
            if onDisk > job.declaredSize ?? HostileInput.maxFileBytes {
                // Longer than the manifest says: not a prefix of the wanted file.
                unlink(part)
                onDisk = 0
            }
            let hasher = StreamingSHA256(path: part, declaredSize: job.declaredSize ?? HostileInput.maxFileBytes, onReceived: onReceived)
            try hasher.absorbExisting(length: onDisk)
            return (onDisk, hasher)
        }
    }

    private func refuse(_ part: String, _ error: String, _ reason: String) async -> TransferResult {
        await BlockingIO.run { _ = unlink(part) }
        return .refused(error: error, reason: reason)
    }
}
