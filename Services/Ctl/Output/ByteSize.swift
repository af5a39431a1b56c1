import Foundation

/// Sizes as people type and read them. Decimal units throughout, like `ls -h --si`, `df -H`
/// and download tools: `k`/`kB` = 1000, `M`/`MB` = 1000², `G`/`GB` = 1000³, `T`/`TB` = 1000⁴;
/// the binary units are spelled out: `Ki`/`KiB` = 1024, `Mi`/`MiB`, `Gi`/`GiB`, `Ti`/`TiB`.
/// Units are case-insensitive; a plain number is bytes.
enum ByteSize {
    /// `500M` → 500 000 000, `1.5GiB` → 1 610 612 736, `4096` → 4096; nil when it is not a size
    /// (negative, not a number, an unknown unit, a fraction of a byte, beyond Int64).
    static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let unitStart = trimmed.firstIndex(where: { $0.isLetter }) ?? trimmed.endIndex
        let number = trimmed[..<unitStart].trimmingCharacters(in: .whitespaces)
        let unit = trimmed[unitStart...].lowercased()
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(number), value.isFinite, value >= 0,
            let multiplier = multipliers[unit]
        else { return nil }
        let bytes = value * multiplier
        guard bytes < 9.2e18 else { return nil }
        // A byte count must be whole: "1.5" or "0.5B" is a mistake, "1.5k" is 1500.
        if multiplier == 1, bytes != bytes.rounded() { return nil }
        return Int64(bytes.rounded())
    }

    private static let multipliers: [String: Double] = {
        var table: [String: Double] = ["": 1, "b": 1]
        for (i, prefix) in ["k", "m", "g", "t"].enumerated() {
            let decimal = pow(1000, Double(i + 1)), binary = pow(1024, Double(i + 1))
            table[prefix] = decimal
            table[prefix + "b"] = decimal
            table[prefix + "i"] = binary
            table[prefix + "ib"] = binary
        }
        return table
    }()

    /// `1.4 GB`, `512 MB`, `25.3 kB`, `999 B`: decimal units, one decimal below 100.
    static func format(_ count: Double?) -> String {
        guard let count, count.isFinite else { return "-" }
        let units = ["B", "kB", "MB", "GB", "TB", "PB"]
        var value = abs(count), unit = 0
        while value >= 999.95, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        let sign = count < 0 ? "-" : ""
        if unit == 0 { return "\(sign)\(Int(value.rounded())) B" }
        let digits = value < 99.95 ? String(format: "%.1f", value) : String(format: "%.0f", value)
        return "\(sign)\(digits) \(units[unit])"
    }

    /// A rate: `250 kB/s`.
    static func rate(_ bytesPerSecond: Double) -> String { format(bytesPerSecond) + "/s" }
}
