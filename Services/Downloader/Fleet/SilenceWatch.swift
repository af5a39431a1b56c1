import Foundation
import Logging
import Systemd
import Wire

/// Warns before the box falls silent: when `silentAt` of the offline forecast comes nearer than
/// `downloader.forecastWarnHours` (trusted time), one `SilenceForecast` event and one journal
/// line at warning level; when it moves out of that window again (a sync brought content that
/// lasts longer, or nothing expires any more), one `SilenceForecastCleared` event and an info
/// line, so that the next crossing warns again. Once per crossing, however often it is checked.
///
/// With nothing playable the state is left as it is: a box that never held anything is not
/// warned about, and one whose last item expired was warned about before it did.
actor SilenceWatch {
    /// How often the forecast is checked: a catalog read, nothing written.
    static let interval = Duration.seconds(5)

    private let warnSeconds: Double
    private let events: DownloaderEvents
    private let logger: Logger
    private var warned = false

    init(warnHours: Double, events: DownloaderEvents, logger: Logger) {
        warnSeconds = warnHours * 3600
        self.events = events
        self.logger = logger
    }

    /// Whether `forecast` at `now` is inside the window (nil: it says nothing either way).
    static func isNear(_ forecast: OfflineForecast, now: Date, warnSeconds: Double) -> Bool? {
        guard forecast.playableItems > 0 else { return nil }
        guard warnSeconds > 0, let silentAt = forecast.silentAt else { return false }
        return silentAt.timeIntervalSince(now) < warnSeconds
    }

    func check(_ forecast: OfflineForecast, now: Date) {
        guard let near = Self.isNear(forecast, now: now, warnSeconds: warnSeconds), near != warned else { return }
        warned = near
        let hours = warnSeconds / 3600
        if near, let silentAt = forecast.silentAt {
            events.publish(.silenceForecast(silentAt: silentAt, playableSeconds: forecast.playableSeconds, warnHours: hours))
            logger.warning(
                "offline content runs out in \(Self.hoursAndMinutes(silentAt.timeIntervalSince(now))): silent at \(UTCTimestamp.rfc3339(silentAt)) without a sync (forecastWarnHours \(Self.format(hours)))",
                metadata: LogMessageID.silenceForecast.metadata([
                    "silent_at": "\(UTCTimestamp.rfc3339(silentAt))",
                    "playable_seconds": "\(Int(forecast.playableSeconds.rounded()))",
                ]))
        } else {
            events.publish(.silenceForecastCleared(silentAt: forecast.silentAt, playableSeconds: forecast.playableSeconds, warnHours: hours))
            logger.info(
                "offline content lasts beyond forecastWarnHours again: silent at \(forecast.silentAt.map(UTCTimestamp.rfc3339) ?? "never")")
        }
    }

    /// "2 h 05 min" (under an hour, "5 min").
    static func hoursAndMinutes(_ seconds: Double) -> String {
        let minutes = Int((max(0, seconds) / 60).rounded())
        guard minutes >= 60 else { return "\(minutes) min" }
        let rest = minutes % 60
        return "\(minutes / 60) h " + (rest < 10 ? "0" : "") + "\(rest) min"
    }

    private static func format(_ hours: Double) -> String {
        hours == hours.rounded() ? String(Int(hours)) : String(hours)
    }
}
