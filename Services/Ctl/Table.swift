import Wire

/// Column-aligned text for people; the last column is not padded, so long values stay readable.
struct Table {
    var headers: [String]
    var rows: [[String]] = []

    mutating func add(_ row: [String]) { rows.append(row) }

    func render() -> String {
        let all = [headers] + rows
        let columns = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in all { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return all.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }.joined()
        }.joined(separator: "\n")
    }
}

/// Any result object as `key  value` lines, nested objects flattened to dotted keys. The
/// generic human view for results that have no table of their own (policy, network, config…).
enum KeyValues {
    static func render(_ value: JSONValue) -> String {
        var table = Table(headers: ["KEY", "VALUE"])
        flatten(value, prefix: "", into: &table)
        return table.rows.isEmpty ? "(empty)" : table.render()
    }

    private static func flatten(_ value: JSONValue, prefix: String, into table: inout Table) {
        if case .object(let object) = value, !object.isEmpty {
            for key in object.keys.sorted() {
                flatten(object[key]!, prefix: prefix.isEmpty ? key : prefix + "." + key, into: &table)
            }
        } else {
            table.add([prefix.isEmpty ? "value" : prefix, Format.text(value)])
        }
    }
}

/// Short human forms of values.
enum Format {
    /// A value on one line: strings bare, `-` for null or absent, arrays and objects as JSON.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: return "-"
        case .string(let s)?: return s
        case .bool(let b)?: return b ? "yes" : "no"
        case .number(let n)?:
            if let i = JSONValue.number(n).intValue { return String(i) }
            return String((n * 1000).rounded() / 1000)
        case .array(let a)? where a.isEmpty: return "-"
        case let other?: return CtlOutput.compact(other)
        }
    }

    /// `m:ss` (or `h:mm:ss`).
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded(.down))
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    /// Decimal units, like `ls -h --si` and download tools.
    static func bytes(_ count: Double?) -> String {
        guard let count, count.isFinite else { return "-" }
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = count, unit = 0
        while value >= 1000, unit < units.count - 1 { value /= 1000; unit += 1 }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }
}
