import Foundation

/// The numbered errors docs/protocol.md names, as written there: table rows
/// (`| 1000 | `NoOrigin` |`) and running text (`` `FileMissing` 2002 ``, `` `OutputUnavailable` (2011) ``).
/// Each service's error table is checked against it, so a code and its doc cannot drift apart.
public enum ErrorDocs {
    /// Every name docs/protocol.md gives a code in 1000–3999, with the codes it gives it.
    public static func numbered() throws -> [String: Set<Int>] {
        let text = try ProtocolDoc.text()
        var found: [String: Set<Int>] = [:]
        let patterns = [
            #"\|\s*([1-3][0-9]{3})\s*\|\s*`([A-Z][A-Za-z]+)`"#,
            #"`([A-Z][A-Za-z]+)`\s+\(?([1-3][0-9]{3})\b"#,
        ]
        for (index, pattern) in patterns.enumerated() {
            let regex = try NSRegularExpression(pattern: pattern)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let first = String(text[Range(match.range(at: 1), in: text)!])
                let second = String(text[Range(match.range(at: 2), in: text)!])
                let (name, code) = index == 0 ? (second, Int(first)!) : (first, Int(second)!)
                found[name, default: []].insert(code)
            }
        }
        return found
    }

    /// The problems with one service's table: a code the docs do not give its name, or give
    /// another code; and names the docs number within `range` that the table lacks (`shared`
    /// names belong to another table).
    public static func mismatches(table: [(name: String, code: Int)], range: ClosedRange<Int>, shared: Set<String> = []) throws -> [String] {
        let docs = try numbered()
        var problems: [String] = []
        for (name, code) in table where docs[name] != [code] {
            problems.append("\(name) \(code): docs/protocol.md gives \(docs[name].map { "\($0.sorted())" } ?? "no code")")
        }
        let names = Set(table.map(\.name))
        for (name, codes) in docs where !names.contains(name) && !shared.contains(name) && codes.contains(where: range.contains) {
            problems.append("\(name) \(codes.sorted()): in docs/protocol.md but not in the table")
        }
        return problems.sorted()
    }
}
