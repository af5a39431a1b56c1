import BlockingIO
import Foundation
import GRDB
import HTTPClient
import ServiceKit
import ServiceLifecycle
import StateDB
import Wire

/// The downloader's part of the health gate (it started, its media directory takes files), of
/// its metrics, and `offline.forecast` (docs/protocol.md, "Field operations").
enum DownloaderFleet {
    static func register(on router: inout RPCRouter, core: Task<DownloaderCore, Error>, context: DaemonContext) {
        router.register("offline.forecast", params: DownloaderMethods.Empty.self) { _, _ in
            let ready = try await core.value
            return try await OfflineForecast.read(try await context.catalog(), now: await ready.trustedNow()).json
        }
    }

    /// The loop behind the `SilenceForecast` warning: the forecast at the trusted time, every
    /// `SilenceWatch.interval` once the core is up.
    static func silenceWatch(
        core: Task<DownloaderCore, Error>, context: DaemonContext, settings: DownloaderSettings, events: DownloaderEvents
    ) -> any Service {
        let watch = SilenceWatch(warnHours: settings.forecastWarnHours, events: events, logger: context.logger)
        return RepeatingService("silence forecast", parts: core) { core in
            guard settings.forecastWarnHours > 0 else { return nil }
            let now = await core.trustedNow()
            if let catalog = try? await context.catalog(), let forecast = try? await OfflineForecast.read(catalog, now: now) {
                await watch.check(forecast, now: now)
            }
            return SilenceWatch.interval
        }
    }

    static func problems(core: Task<DownloaderCore, Error>, context: DaemonContext) -> @Sendable () async -> [String] {
        {
            // The core is up within moments of the catalog opening; a failure is final. The
            // media directory is the core's to create, so it is judged once the core is up.
            do {
                _ = try await withTimeout(.seconds(2)) { try await core.value }
            } catch is TimedOut {
                return ["still starting (reconciling the media directory with the catalog)"]
            } catch {
                return ["could not start: \(error)"]
            }
            if let media = await BlockingIO.run({ mediaDirectoryProblem(context.settings.stateDir + "/media") }) {
                return [media]
            }
            return []
        }
    }

    /// Nil when `path` is a directory this process may create files in, on a file system
    /// mounted read-write; else why not. `access(2)`, not a test file: a check every few seconds
    /// must not write to flash.
    static func mediaDirectoryProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "media directory \(path) is missing: \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "media directory \(path) is not a directory" }
        if access(path, W_OK | X_OK) != 0 {
            return "media directory \(path) is not writable: \(String(cString: strerror(errno)))"
        }
        var fs = statvfs()
        if statvfs(path, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 {
            return "media directory \(path) is on a read-only file system"
        }
        return nil
    }

    static func metrics(core: Task<DownloaderCore, Error>, context: DaemonContext) -> @Sendable () async -> [MetricFamily] {
        {
            guard let catalog = try? await context.catalog() else { return [] }
            var families: [MetricFamily] = []
            if let counts = try? await catalog.read({ db in
                (
                    pending: try Int.fetchOne(
                        db,
                        sql: """
                            SELECT count(DISTINCT d.fileId) FROM downloads d JOIN files f ON f.id = d.fileId
                            WHERE d.state = 'queued' AND f.state IN ('pending', 'partial', 'corrupt')
                            """) ?? 0,
                    media: try Int64.fetchOne(db, sql: "SELECT coalesce(sum(bytesOnDisk), 0) FROM files") ?? 0
                )
            }) {
                families.append(.gauge("cassette_downloads_pending", help: "Files wanted and not yet downloaded.", Double(counts.pending)))
                families.append(
                    .gauge(
                        "cassette_media_bytes", help: "Bytes of media on the device, partial downloads included.",
                        unit: "bytes", Double(counts.media)))
            }
            if let ready = try? await withTimeout(.seconds(2), { try await core.value }) {
                let now = await ready.trustedNow()
                if let forecast = try? await OfflineForecast.read(catalog, now: now) {
                    families.append(
                        .gauge(
                            "cassette_offline_playable_seconds",
                            help: "Seconds of what is on the device that can still be played offline.",
                            unit: "seconds", forecast.playableSeconds))
                    families.append(
                        .gauge(
                            "cassette_seconds_until_silence",
                            help: "Seconds until the last station or product on the device expires (+Inf: none expires).",
                            forecast.secondsUntilSilence(now: now)))
                }
            }
            return families
        }
    }

    static func totals() -> [MetricTotal] {
        [
            MetricTotal(
                "cassette_download_bytes", help: "Body bytes received from the origin (media, playlists and API answers).",
                unit: "bytes", persistStep: 1_048_576
            ) { Double(TransferTotals.bodyBytesReceived) }
        ]
    }
}

struct TimedOut: Error {}

/// `body`'s result, or `TimedOut` once `limit` passed (`body` is then left to finish unwatched).
func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
