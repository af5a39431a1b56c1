import Foundation

/// One place for how Cassette turns values into JSON and back, so every service prints
/// the same key order and date format.
public enum JSONCoding {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    public static func decoder() -> JSONDecoder { JSONDecoder() }

    /// Converts any `Encodable` into a `JSONValue` (used for results and event data).
    public static func value<T: Encodable>(_ v: T) throws -> JSONValue {
        let data = try encoder().encode(v)
        return try decoder().decode(JSONValue.self, from: data)
    }

    /// Decodes a typed value out of a `JSONValue`, e.g. a method's params.
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try decoder().decode(type, from: Data(JSONWriter.write(value)))
    }

    /// Parses one JSON value from UTF-8 bytes (`JSONReader`); use `JSONValue.parse` outside Wire.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONReader.parse(bytes)
    }

    /// Compact UTF-8, sorted keys. Cannot fail: a non-finite number prints as `null`.
    public static func data(_ value: JSONValue) -> [UInt8] {
        JSONWriter.write(value)
    }
}
