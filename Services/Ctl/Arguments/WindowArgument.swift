import ArgumentParser
import Wire

/// `--download-window 'mon-fri 22:00-06:00'`: days, a local time span, and optionally the
/// window's own rate limit (`'sat,sun 00:00-24:00 5M'`). Days are names (mon…sun), ranges of
/// them (`mon-fri`, `fri-mon`) or `daily`, separated by commas. `none` stands for no window at
/// all (downloads at any time).
struct WindowArgument: ExpressibleByArgument, Equatable {
    /// nil for `none`.
    let window: JSONValue?

    static let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    init?(argument: String) {
        let words = argument.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if words.count == 1, words[0].lowercased() == "none" {
            window = nil
            return
        }
        guard (2...3).contains(words.count), let days = Self.parseDays(words[0].lowercased()) else { return nil }
        let span = words[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard span.count == 2, !span[0].isEmpty, !span[1].isEmpty else { return nil }
        var fields: [String: JSONValue] = ["days": .array(days.map(JSONValue.string)), "from": .string(span[0]), "to": .string(span[1])]
        if words.count == 3 {
            guard let rate = RateArgument(argument: words[2])?.bytesPerSecond else { return nil }
            fields["maxBytesPerSecond"] = .number(Double(rate))
        }
        window = .object(fields)
    }

    /// `mon-fri,sun` → mon, tue, wed, thu, fri, sun (in week order, Sunday first).
    static func parseDays(_ text: String) -> [String]? {
        if text == "daily" { return days }
        var chosen = Set<Int>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = part.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(ends.count), let first = days.firstIndex(of: ends[0]),
                let last = days.firstIndex(of: ends[ends.count - 1])
            else { return nil }
            var day = first
            while true {
                chosen.insert(day)
                if day == last { break }
                day = (day + 1) % 7
            }
        }
        return chosen.sorted().map { days[$0] }
    }

    static let help = ArgumentHelp(
        "A download window in local time, e.g. 'mon-fri 22:00-06:00' or 'sat,sun 00:00-24:00 5M' (its own rate limit); repeat for more; 'none' allows downloads at any time.",
        valueName: "days from-to [rate]")
}

/// `--max-rate 2M` (bytes per second, `/s` optional: 2M, 500k/s, 1.5MiB) or `none`.
struct RateArgument: ExpressibleByArgument, Equatable {
    /// nil for `none`.
    let bytesPerSecond: Int64?

    init?(argument: String) {
        var text = argument
        if text.lowercased().hasSuffix("/s") { text.removeLast(2) }
        guard let size = SizeArgument(argument: text) else { return nil }
        bytesPerSecond = size.bytes
    }
}
