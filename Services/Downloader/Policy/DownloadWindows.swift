import Foundation
import Wire

/// One download window of the policy's `downloadWindows`: on the listed days, from `from` to
/// `to` in the device's local time. A window whose `to` is not after its `from` ends on the next
/// day (it belongs to the day it starts: `fri 22:00-06:00` runs into Saturday morning); `from`
/// equal to `to` is a whole day from `from`. `maxBytesPerSecond`, when set, is the rate limit
/// while it is open instead of the policy's.
struct DownloadWindow: Sendable, Equatable {
    enum Day: String, CaseIterable, Sendable {
        // In the order of the week's days in `WallClock.weekday` (1 = Sunday).
        case sun, mon, tue, wed, thu, fri, sat
        var weekday: Int { Self.allCases.firstIndex(of: self)! + 1 }
        /// Monday first, as the days are listed back.
        var order: Int { (weekday + 5) % 7 }
    }

    var days: [Day]
    /// Seconds after local midnight, 0…86399.
    var from: Int
    /// Seconds after local midnight, 0…86400 (`24:00`).
    var to: Int
    var maxBytesPerSecond: Int64?

    static let keys = ["days", "from", "to", "maxBytesPerSecond"]
    /// Below this a rate limit could not give each of 32 parallel transfers the slot watch's
    /// floor of 512 B/s.
    static let minimumBytesPerSecond: Int64 = 16 << 10

    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "days": .array(days.map { .string($0.rawValue) }),
            "from": .string(Self.clockText(from)), "to": .string(Self.clockText(to)),
        ]
        if let maxBytesPerSecond { fields["maxBytesPerSecond"] = .number(Double(maxBytesPerSecond)) }
        return .object(fields)
    }

    /// A window as `policy.set` or the config file gives it; errors name `field` (`params.downloadWindows[0]`).
    static func parse(_ value: JSONValue, field: String) throws(RPCError) -> DownloadWindow {
        let example = "e.g. {\"days\":[\"mon\",\"tue\"],\"from\":\"22:00\",\"to\":\"06:00\"}"
        guard let object = value.objectValue else { throw .invalidParams("\(field) must be an object, \(example).") }
        for key in object.keys.sorted() where !keys.contains(key) {
            throw .invalidParams("\(field).\(key) is not a window key; known: \(keys.joined(separator: ", ")).")
        }
        guard let names = object["days"]?.arrayValue, !names.isEmpty else {
            throw .invalidParams("\(field).days must be a non-empty list of days: mon, tue, wed, thu, fri, sat, sun.")
        }
        var days: [Day] = []
        for (i, name) in names.enumerated() {
            guard let day = name.stringValue.flatMap({ Day(rawValue: $0.lowercased()) }) else {
                throw .invalidParams("\(field).days[\(i)] must be one of mon, tue, wed, thu, fri, sat, sun.")
            }
            if !days.contains(day) { days.append(day) }
        }
        days.sort { $0.order < $1.order }
        guard let from = object["from"]?.stringValue.flatMap({ clockSeconds($0, endOfDay: false) }) else {
            throw .invalidParams("\(field).from must be a local time of day \"HH:MM\" (or \"HH:MM:SS\"), 00:00…23:59.")
        }
        guard let to = object["to"]?.stringValue.flatMap({ clockSeconds($0, endOfDay: true) }) else {
            throw .invalidParams("\(field).to must be a local time of day \"HH:MM\" (or \"HH:MM:SS\"), 00:00…24:00.")
        }
        var limit: Int64?
        if let rate = object["maxBytesPerSecond"], rate != .null {
            limit = try Self.rate(rate, field: "\(field).maxBytesPerSecond")
        }
        return DownloadWindow(days: days, from: from, to: to, maxBytesPerSecond: limit)
    }

    /// A rate limit: a whole number of bytes per second, at least `minimumBytesPerSecond`.
    static func rate(_ value: JSONValue, field: String) throws(RPCError) -> Int64 {
        guard let n = value.doubleValue, n.rounded() == n, n >= Double(minimumBytesPerSecond), n <= 9.0e15 else {
            throw .invalidParams("\(field) must be a whole number of bytes per second, at least \(minimumBytesPerSecond).")
        }
        return Int64(n)
    }

    /// `HH:MM` or `HH:MM:SS` as seconds after midnight; `24:00` only as an end.
    static func clockSeconds(_ text: String, endOfDay: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let h = Int(parts[0]), let m = Int(parts[1]), let s = parts.count == 3 ? Int(parts[2]) : 0,
            m < 60, s < 60
        else { return nil }
        let seconds = h * 3600 + m * 60 + s
        return seconds < 86_400 || (endOfDay && seconds == 86_400) ? seconds : nil
    }

    static func clockText(_ seconds: Int) -> String {
        let hm = LocalWallClock.two(seconds / 3600) + ":" + LocalWallClock.two(seconds / 60 % 60)
        return seconds % 60 == 0 ? hm : hm + ":" + LocalWallClock.two(seconds % 60)
    }

    /// `mon-fri 22:00-06:00`, `sat,sun 00:00-24:00`, `daily 01:00-05:00`: for reasons and logs.
    var summary: String {
        "\(daysText) \(Self.clockText(from))-\(Self.clockText(to))"
    }

    /// The days, runs of three or more as a range (Monday first).
    private var daysText: String {
        guard days.count < 7 else { return "daily" }
        var runs: [[Day]] = []
        for day in days {
            if let last = runs.last?.last, last.order + 1 == day.order { runs[runs.count - 1].append(day) } else { runs.append([day]) }
        }
        return runs.map { run in
            run.count >= 3 ? "\(run[0].rawValue)-\(run[run.count - 1].rawValue)" : run.map(\.rawValue).joined(separator: ",")
        }.joined(separator: ",")
    }

    /// The times this window is open that start on `day` (a local midnight): [start, end).
    func interval(startingOn day: Date, clock: any WallClock) -> (start: Date, end: Date)? {
        let weekday = clock.weekday(day)
        guard days.contains(where: { $0.weekday == weekday }) else { return nil }
        let endDay = to > from ? day : clock.day(1, after: day)
        return (Self.time(from, on: day, clock: clock), Self.time(to, on: endDay, clock: clock))
    }

    /// The wall-clock time `seconds` after the local midnight `day`; `24:00` is the next midnight.
    private static func time(_ seconds: Int, on day: Date, clock: any WallClock) -> Date {
        seconds == 86_400 ? clock.day(1, after: day) : clock.time(seconds, on: day)
    }
}

/// Whether the policy's download windows let downloads run now, and the rate limit in force.
/// No windows (none set, or an empty list): always open, under the policy's `maxBytesPerSecond`.
struct DownloadWindows: Sendable, Equatable {
    var windows: [DownloadWindow]
    /// The policy's limit: outside any window's own, and for what passes while all are closed.
    var maxBytesPerSecond: Int64?

    enum State: Sendable, Equatable {
        /// Downloads may run, at most at `limit` bytes per second (nil: no limit). `closesAt` is
        /// nil when no window is set.
        case open(limit: Int64?, closesAt: Date?)
        /// Only `offline.add {"now":true}` items run (at the policy's limit); the next window
        /// opens at `opensAt` (nil: none does, a window list of no days cannot be set).
        case closed(opensAt: Date?, next: DownloadWindow?)

        var isOpen: Bool { if case .open = self { true } else { false } }
    }

    /// Windows are read in the device's local time zone (`TZ`, else `/etc/localtime`).
    func state(at now: Date, clock: any WallClock = LocalWallClock()) -> State {
        guard !windows.isEmpty else { return .open(limit: maxBytesPerSecond, closesAt: nil) }
        let today = clock.startOfDay(now)
        var openLimits: [Int64?] = []
        var intervals: [(start: Date, end: Date)] = []
        var next: (at: Date, window: DownloadWindow)?
        // Yesterday's windows may run into today; a week and a day ahead finds every next opening.
        for offset in -1...8 {
            let day = clock.day(offset, after: today)
            for window in windows {
                guard let (start, end) = window.interval(startingOn: day, clock: clock) else { continue }
                intervals.append((start, end))
                if start <= now, now < end {
                    openLimits.append(window.maxBytesPerSecond ?? maxBytesPerSecond)
                } else if start > now, next.map({ start < $0.at }) ?? true {
                    next = (start, window)
                }
            }
        }
        guard !openLimits.isEmpty else { return .closed(opensAt: next?.at, next: next?.window) }
        // Downloads may run until no window is open: windows that touch or overlap go on.
        var closesAt = now
        for interval in intervals.sorted(by: { $0.start < $1.start }) where interval.start <= closesAt {
            closesAt = max(closesAt, interval.end)
        }
        // Windows that overlap: the most generous limit of those open wins (nil: no limit).
        let limit = openLimits.contains(where: { $0 == nil }) ? nil : openLimits.compactMap { $0 }.max()
        // Nine days of windows back to back (every day, whole days) never close.
        return .open(limit: limit, closesAt: intervals.contains(where: { $0.end > closesAt }) ? closesAt : nil)
    }

    /// The idle reason of items held back while every window is closed.
    static func reason(_ state: State, clock: any WallClock = LocalWallClock()) -> String {
        guard case .closed(let opensAt, let next) = state, let opensAt, let next else {
            return "outside every download window"
        }
        return "outside every download window; the next (\(next.summary)) opens at \(clock.timestamp(opensAt))"
    }

    /// `policy.get`'s `downloadWindow`: whether one is open now and until or from when.
    func json(at now: Date, clock: any WallClock = LocalWallClock()) -> JSONValue {
        switch state(at: now, clock: clock) {
        case .open(let limit, let closesAt):
            return [
                "open": true, "limit": limit.map { .number(Double($0)) } ?? .null,
                "closesAt": closesAt.map { .string(clock.timestamp($0)) } ?? .null,
            ]
        case .closed(let opensAt, _):
            return [
                "open": false, "limit": maxBytesPerSecond.map { .number(Double($0)) } ?? .null,
                "opensAt": opensAt.map { .string(clock.timestamp($0)) } ?? .null,
            ]
        }
    }
}

extension DownloadWindow: Codable {
    private enum CodingKeys: String, CodingKey { case days, from, to, maxBytesPerSecond }

    /// Stored as `policy.set` takes it, and checked the same way when read back.
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var fields: [String: JSONValue] = [
            "days": .array(try c.decode([String].self, forKey: .days).map(JSONValue.string)),
            "from": .string(try c.decode(String.self, forKey: .from)),
            "to": .string(try c.decode(String.self, forKey: .to)),
        ]
        if let rate = try c.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond) { fields["maxBytesPerSecond"] = .number(Double(rate)) }
        do {
            self = try Self.parse(.object(fields), field: "downloadWindows[]")
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: error.message))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(days.map(\.rawValue), forKey: .days)
        try c.encode(Self.clockText(from), forKey: .from)
        try c.encode(Self.clockText(to), forKey: .to)
        try c.encodeIfPresent(maxBytesPerSecond, forKey: .maxBytesPerSecond)
    }
}
