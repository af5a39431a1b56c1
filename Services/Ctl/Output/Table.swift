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
/// Values are shown for people by their key's name: `…Bytes` as a size, `…Seconds` as a
/// length of time, `…At`/`…Until` as a local date (`Format.keyed`).
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
            let key = prefix.split(separator: ".").last.map(String.init) ?? prefix
            table.add([prefix.isEmpty ? "value" : prefix, Format.keyed(key, value)])
        }
    }
}
