import BlockingIO
import Foundation
import GRDB
import Logging
import MediaDecoder
import OriginClient
import StateDB
import Wire

/// Chooses where a product's bytes come from — the TIDAL Playback Engine's "Media product source
/// for playback" table — and opens them:
///
/// | mode    | offline state                          | source                                              |
/// |---------|----------------------------------------|-----------------------------------------------------|
/// | any     | OFFLINED_AND_VALID                     | the local file; no network request at all            |
/// | any     | OFFLINED_BUT_NOT_VALID                 | `OfflineNotValid`                                    |
/// | offline | NOT_OFFLINED                           | `IllegalPlaybackRequest`                             |
/// | online  | NOT_OFFLINED, its file being written   | the growing `.part` file (playback during download)  |
/// | online  | NOT_OFFLINED                           | `playbackinfo?mode=stream` → stream (HTTP cache); HLS: `SourceResolver+HLSStream` |
///
/// Offline answers come from `OfflineAvailability`, the same code the downloader answers
/// `offline.state` with. Replacements: the context carries both ids and the metadata of the
/// product actually played (catalog `mediaItems` or playbackinfo).
final class SourceResolver: Sendable {
    let catalog: StateDB
    let mediaDirectory: String
    let origin: OriginClient?
    let cache: HTTPCache?
    private let now: (@Sendable () -> Date)?
    private let streamOptions: HTTPStreamSource.Options
    private let growingPollInterval: Double
    let logger: Logger

    /// - Parameters:
    ///   - now: the time validity is judged at (tests); by default the player's trusted time
    ///     (`PlayClock`: the catalog's anchor or the last server time `origin` saw, carried forward).
    init(
        catalog: StateDB, mediaDirectory: String, origin: OriginClient?, cache: HTTPCache?,
        now: (@Sendable () -> Date)? = nil, streamOptions: HTTPStreamSource.Options = .init(),
        growingPollInterval: Double = 0.05, logger: Logger = Logger(label: "player.source")
    ) {
        self.catalog = catalog
        self.mediaDirectory = mediaDirectory
        self.origin = origin
        self.cache = cache
        self.now = now
        self.streamOptions = streamOptions
        self.growingPollInterval = growingPollInterval
        self.logger = logger
    }

    /// The TIDAL source-selection table. `events` reports stalls of a growing (still downloading) file or a
    /// slow stream, and a download that failed underneath a playing file.
    func resolve(
        productId: String, quality: String?, offlineMode: Bool,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> PlaybackSource {
        guard OriginID.isValid(productId) else { throw SourceError.invalidProductId(productId) }
        let fixedNow = now?()
        let origin = origin
        let found = try await SourceStore(catalog: catalog).lookup(productId: productId) { db in
            try fixedNow ?? PlayClock.now(origin: origin, db: db)
        }
        let (window, local, download, metadata) = (found.window, found.local, found.download, found.metadata)
        let state = window.validity.state
        // An HLS presentation is playlists and segments, not one file: played once complete
        // (`SourceResolver+HLS`); while it downloads, or not offlined, it is streamed.
        if let local, local.item.manifestType == "hls" {
            switch state {
            case .offlinedAndValid:
                return try await hlsSource(requested: productId, local: local, metadata: metadata)
            case .offlinedButNotValid:
                throw SourceError.offlineNotValid(productId, endedAt: window.validity.until)
            case .notOfflined:
                if offlineMode { throw SourceError.illegalPlaybackRequest(productId) }
                guard let origin else { throw SourceError.notOfflined(productId) }
                return try await stream(productId: productId, quality: quality, origin: origin, events: events)
            }
        }
        switch state {
        case .offlinedAndValid:
            guard let local, local.isVerified else {
                throw SourceError.sourceUnavailable("\(productId) is offlined but the catalog names no verified file for it")
            }
            let path = try absolutePath(local.relativePath)
            let source: FileByteSource
            do {
                source = try FileByteSource(path: path)
            } catch let error as ByteSourceError where error.name == "FileNotFound" {
                throw PlayerError(.fileMissing, "the offlined file of \(local.actualProductId) is not on disk: \(local.relativePath)")
            }
            log(productId, local.actualProductId, "local file \(local.relativePath)")
            var context = Self.context(productId, local, metadata)
            if context.codec == nil || context.sampleRate == nil || context.bitRate == nil { await Self.probe(path, into: &context) }
            return PlaybackSource(source: source, context: context)
        case .offlinedButNotValid:
            throw SourceError.offlineNotValid(productId, endedAt: window.validity.until)
        case .notOfflined:
            if offlineMode { throw SourceError.illegalPlaybackRequest(productId) }
            if let local, var download {
                // `bytesOnDisk` lags the file by up to 5 s: the `.part` itself says whether
                // bytes are there (its size read on the blocking pool, like every file access here).
                if let path = try? absolutePath(local.relativePath), let size = await MediaFiles.size(path + ".part") {
                    download.bytesOnDisk = max(download.bytesOnDisk, size)
                }
                guard download.isBeingWritten else {
                    guard let origin else { throw SourceError.notOfflined(productId) }
                    return try await stream(productId: productId, quality: quality, origin: origin, events: events)
                }
                // The device's copy, though incomplete: its request's license and window must hold.
                guard window.holds else { throw SourceError.offlineNotValid(productId, endedAt: window.validity.until) }
                let path = try absolutePath(local.relativePath)
                let relative = local.relativePath
                let catalog = catalog
                let source = GrowingFileSource(
                    path: path, declaredSize: local.sizeBytes, pollInterval: growingPollInterval,
                    progress: { SourceStore(catalog: catalog).progress(relativePath: relative) },
                    events: events)
                log(productId, local.actualProductId, "file being downloaded \(relative).part")
                return PlaybackSource(source: source, context: Self.context(productId, local, metadata))
            }
            guard let origin else { throw SourceError.notOfflined(productId) }
            return try await stream(productId: productId, quality: quality, origin: origin, events: events)
        }
    }

    // MARK: Streaming

    private func stream(
        productId: String, quality: String?, origin: OriginClient,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> PlaybackSource {
        let info = try await Self.playbackInfo(productId: productId, quality: quality, origin: origin)
        if info.manifestType == "hls" {
            return try await hlsStream(info, quality: quality, origin: origin, events: events)
        }
        let refresh: @Sendable () async throws -> String = {
            try await Self.playbackInfo(productId: productId, quality: quality, origin: origin).url
        }
        let source = try await HTTPStreamSource.open(
            url: info.url, origin: origin, cache: cache, declaredSize: info.sizeBytes,
            options: streamOptions, refresh: refresh, events: events)
        log(
            productId, info.context.actualProductId,
            source is FileByteSource ? "HTTP cache \(HTTPCache.path(of: info.url))" : "stream \(HTTPCache.path(of: info.url))")
        return PlaybackSource(source: source, context: info.context)
    }

    struct StreamInfo: Sendable {
        /// `progressive` (`url` is the media file) or `hls` (`url` is the master playlist).
        var manifestType: String
        var url: String
        var sizeBytes: Int64?
        var context: PlaybackContextInfo
        /// The playbackinfo's `licenseSecurityToken`, for a license of its keys.
        var securityToken: String?
    }

    /// `GET /v1/playbackinfo/{id}?mode=stream&quality=…`; origin refusals (4032, 4033 …) pass
    /// through as `OriginError`.
    static func playbackInfo(productId: String, quality: String?, origin: OriginClient) async throws -> StreamInfo {
        var query = ["mode": "stream"]
        if let quality { query["quality"] = quality }
        let json = try await origin.get("/v1/playbackinfo/\(productId)", query: query, retry: .streaming)
        let actual = json["productId"]?.stringValue ?? productId
        guard OriginID.isValid(actual) else {
            throw SourceError.sourceUnavailable("playbackinfo for \(productId) named an invalid product id \(actual.debugDescription)")
        }
        let manifestType = json["manifestType"]?.stringValue ?? "progressive"
        guard manifestType == "progressive" || manifestType == "hls" else {
            throw SourceError.sourceUnavailable("\(actual) is delivered as \(manifestType); the player streams progressive files and HLS only")
        }
        guard let relative = json["manifest"]?["url"]?.stringValue else {
            throw SourceError.sourceUnavailable("playbackinfo for \(productId) has no manifest.url")
        }
        let url = try origin.resolveURL(relative)
        let gain = json["replayGain"]
        let context = PlaybackContextInfo(
            requestedProductId: json["requestedProductId"]?.stringValue ?? productId, actualProductId: actual,
            audioQuality: json["audioQuality"]?.stringValue, codec: json["codec"]?.stringValue,
            sampleRate: json["sampleRate"]?.intValue, bitDepth: json["bitDepth"]?.intValue,
            durationSeconds: json["durationSeconds"]?.doubleValue,
            trackGain: gain?["trackGain"]?.doubleValue, trackPeak: gain?["trackPeak"]?.doubleValue,
            albumGain: gain?["albumGain"]?.doubleValue, albumPeak: gain?["albumPeak"]?.doubleValue,
            offline: false, display: display(json))
        let size = json["manifest"]?["sizeBytes"]?.intValue.map(Int64.init)
        var withRate = context
        // An HLS manifest's size is the whole presentation's: the variant played gives the rate.
        if manifestType == "progressive" { withRate.bitRate = averageBitRate(bytes: size, seconds: context.durationSeconds) }
        return StreamInfo(
            manifestType: manifestType, url: url, sizeBytes: size, context: withRate,
            securityToken: json["licenseSecurityToken"]?.stringValue)
    }

    /// Title, artist, album and images of a playbackinfo answer (image paths as the origin gave them).
    static func display(_ json: JSONValue) -> DisplayMetadata {
        var images: [String: String] = [:]
        for (kind, value) in json["images"]?.objectValue ?? [:] {
            if let path = value.stringValue { images[kind] = path }
        }
        return DisplayMetadata(
            title: json["title"]?.stringValue, artist: json["artist"]?.stringValue,
            album: json["album"]?.stringValue, images: images.isEmpty ? nil : images)
    }

    // MARK: Local files

    /// `files.localPath` is relative to the media folder and never climbs out of it
    /// (docs/catalog.md); anything else is refused rather than opened.
    func absolutePath(_ relative: String) throws -> String {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !relative.isEmpty, !relative.hasPrefix("/"), !parts.contains(".."), !relative.contains("\0") else {
            throw SourceError.sourceUnavailable("the catalog names an unsafe local path \(relative.debugDescription)")
        }
        return mediaDirectory + "/" + relative
    }

    /// The context of a product played from the device: its `mediaItems` row, the images on
    /// disk, a video's offline quality, and the file's size over its length as its bit rate (an
    /// HLS presentation's is measured from the playlist played instead, `hlsSource`).
    static func context(
        _ requested: String, _ local: OfflineAvailability.LocalFile,
        _ metadata: SourceStore.LocalMetadata
    ) -> PlaybackContextInfo {
        let item = local.item
        return PlaybackContextInfo(
            requestedProductId: requested, actualProductId: local.actualProductId, audioQuality: item.audioQuality,
            codec: item.codec, sampleRate: item.sampleRate, bitDepth: item.bitDepth, durationSeconds: item.durationSeconds,
            trackGain: item.trackGain, trackPeak: item.trackPeak, albumGain: item.albumGain, albumPeak: item.albumPeak,
            offline: true,
            display: DisplayMetadata(
                title: item.title, artist: item.artist, album: item.album,
                images: metadata.images.isEmpty ? nil : metadata.images),
            bitRate: local.item.manifestType == "hls" ? nil : averageBitRate(bytes: local.sizeBytes, seconds: item.durationSeconds),
            videoQuality: item.productType.uppercased() == "VIDEO" ? metadata.quality : nil)
    }

    /// Fills what the catalog does not say about a local file (a station item's row names no
    /// codec or rate; a row without a size gives no bit rate) from the file itself, opened on the blocking pool; left as is when it cannot be.
    static func probe(_ path: String, into context: inout PlaybackContextInfo) async {
        guard let info = try? await BlockingIO.run({ try AudioDecoder(path: path).info }) else { return }
        context.codec = context.codec ?? info.codecName
        context.sampleRate = context.sampleRate ?? info.sampleRate
        context.bitDepth = context.bitDepth ?? info.bitsPerSample
        context.durationSeconds = context.durationSeconds ?? info.durationSeconds
        context.bitRate = context.bitRate ?? info.bitRate
    }

    /// Where a product's download stands, as far as choosing a source goes.
    struct DownloadStatus: Sendable, Equatable {
        var fileState: String
        var bytesOnDisk: Int64
        /// The newest `offlineProducts.state` for it, nil for a station item.
        var productState: String?

        /// Bytes are on disk and more are coming (or the file just got verified): play the file.
        /// A download that failed, was deleted or paused, or has no bytes yet is streamed instead.
        var isBeingWritten: Bool {
            guard ["partial", "verified"].contains(fileState), fileState == "verified" || bytesOnDisk > 0 else { return false }
            guard let productState else { return true }
            return ["queued", "downloading", "idle", "cached", "partiallyCached"].contains(productState)
        }
    }

    // MARK: Time and logs

    /// Whether `productId`, played from the device, may still be played, and until when: the
    /// rule its resolution judged by, read again (the engine follows it while the product plays).
    func window(productId: String) async throws -> PlayableWindow {
        let fixedNow = now?()
        let origin = origin
        return try await catalog.read { db in
            if let fixedNow { return try PlayableWindow.read(productId: productId, db: db, now: fixedNow) }
            return try PlayableWindow.read(productId: productId, origin: origin, db: db)
        }
    }

    private func log(_ requested: String, _ actual: String, _ what: String) {
        if requested == actual {
            logger.info("playing \(actual) from \(what)")
        } else {
            logger.info("playing \(actual) (replacement for \(requested)) from \(what)")
        }
    }
}

extension PlaybackSource {
    /// Where the bytes come from, for logs and status: `local`, `download`, `cache` or `stream`.
    var kind: String {
        switch source {
        case is GrowingFileSource: "download"
        case is HTTPStreamSource: "stream"
        case is HLSByteSource: context.offline ? "local" : "stream"
        case is FileByteSource: context.offline ? "local" : "cache"
        default: "other"
        }
    }
}
