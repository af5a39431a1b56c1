import CSystemd
import Foundation

/// A D-Bus value a served property answers with: the few types a media player's properties use.
public indirect enum BusValue: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int64(Int64)
    case double(Double)
    case stringArray([String])
    /// `a{sv}`: a string-keyed dictionary of variants, in the order given.
    case dictionary([BusEntry])

    /// The D-Bus type signature of the value.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int64: "x"
        case .double: "d"
        case .stringArray: "as"
        case .dictionary: "a{sv}"
        }
    }

    /// `prefix` and `id` joined into an object path, `id` escaped the way sd-bus escapes it
    /// (`sd_bus_path_encode`: every byte outside [A-Za-z0-9] as `_xx`), so any string fits.
    public static func objectPath(prefix: String, id: String) -> BusValue {
        var encoded: UnsafeMutablePointer<CChar>?
        guard sd_bus_path_encode(prefix, id, &encoded) >= 0, let encoded else { return .objectPath(prefix) }
        defer { free(encoded) }
        return .objectPath(String(cString: encoded))
    }

    /// Appends the value to a message being built; a negative errno on failure.
    func append(to message: OpaquePointer) -> Int32 {
        switch self {
        case .string(let s): return s.withCString { sd_bus_message_append_basic(message, Self.code("s"), $0) }
        case .objectPath(let p): return p.withCString { sd_bus_message_append_basic(message, Self.code("o"), $0) }
        case .bool(let b):
            var v: Int32 = b ? 1 : 0
            return sd_bus_message_append_basic(message, Self.code("b"), &v)
        case .int64(let x):
            var v = x
            return sd_bus_message_append_basic(message, Self.code("x"), &v)
        case .double(let d):
            var v = d
            return sd_bus_message_append_basic(message, Self.code("d"), &v)
        case .stringArray(let items):
            return Self.container(message, "a", "s") {
                for item in items {
                    let r = item.withCString { sd_bus_message_append_basic(message, Self.code("s"), $0) }
                    if r < 0 { return r }
                }
                return 0
            }
        case .dictionary(let entries):
            return Self.container(message, "a", "{sv}") {
                for entry in entries {
                    let r = Self.container(message, "e", "sv") {
                        let r = entry.key.withCString { sd_bus_message_append_basic(message, Self.code("s"), $0) }
                        if r < 0 { return r }
                        return Self.container(message, "v", entry.value.signature) { entry.value.append(to: message) }
                    }
                    if r < 0 { return r }
                }
                return 0
            }
        }
    }

    private static func container(_ message: OpaquePointer, _ type: Unicode.Scalar, _ contents: String, _ body: () -> Int32) -> Int32 {
        var r = sd_bus_message_open_container(message, code(type), contents)
        if r < 0 { return r }
        r = body()
        if r < 0 { return r }
        return sd_bus_message_close_container(message)
    }

    static func code(_ type: Unicode.Scalar) -> CChar { CChar(UInt8(ascii: type)) }
}

/// One `{sv}` entry of a `BusValue.dictionary`.
public struct BusEntry: Sendable, Equatable {
    public var key: String
    public var value: BusValue

    public init(_ key: String, _ value: BusValue) {
        self.key = key
        self.value = value
    }
}
