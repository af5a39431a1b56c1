import Foundation

/// Why bytes could not be read as a JSON value; `description` names the decoder's complaint.
public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

extension JSONValue {
    /// Parses exactly one JSON value from UTF-8 bytes, such as an HTTP body or one line of a
    /// `.jsonl` log. Booleans and numbers stay apart (`true` never reads as `1`).
    ///
    /// - Throws: `JSONParseError` for empty, truncated or otherwise malformed input.
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        do {
            return try JSONReader.parse(bytes)
        } catch {
            throw JSONParseError(description: "malformed JSON: \(error)")
        }
    }

    /// Compact UTF-8 text with sorted keys (`JSONCoding.data`), so equal documents give equal
    /// bytes; integral numbers print without a fraction. A non-finite number is not JSON and
    /// prints as `null`.
    public func serialized() -> [UInt8] {
        JSONCoding.data(self)
    }
}
