import Foundation
import Wire

/// Where cassettectl writes: results on stdout (a table, or JSON with --json), messages on
/// stderr prefixed `cassettectl: `.
enum CtlOutput {
    static func pretty(_ value: JSONValue) -> String {
        let encoder = JSONCoding.encoder()
        encoder.outputFormatting.insert(.prettyPrinted)
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "\(value)"
    }

    static func compact(_ value: JSONValue) -> String {
        String(decoding: JSONCoding.data(value), as: UTF8.self)
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data("cassettectl: \(text)\n".utf8))
    }

    /// A result for people (`render`) or for scripts (pretty JSON).
    static func show(_ value: JSONValue, json: Bool, render: (JSONValue) -> String) {
        if json { print(pretty(value)) } else { print(render(value)) }
    }
}
