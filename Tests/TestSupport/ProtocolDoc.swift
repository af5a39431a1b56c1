import Foundation

/// docs/protocol.md as the tests read it: its text, and the rows of a table it introduces, so
/// each service's errors and events are checked against what the reference says.
public enum ProtocolDoc {
    /// The whole of docs/protocol.md.
    public static func text() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
    }

    /// The body rows of the first table after `marker`, each as its cells split on `|` (the
    /// first cell is what comes before the leading bar, so the first column is cell 1); nil
    /// when the marker is not in the document.
    public static func tableRows(after marker: String) throws -> [[String]]? {
        let text = try text()
        guard let start = text.range(of: marker) else { return nil }
        let table = text[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }
        return table.dropFirst(2).map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }
}
