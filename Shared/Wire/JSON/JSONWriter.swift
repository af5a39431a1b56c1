/// Writes a `JSONValue` as compact UTF-8 with sorted keys.
///
/// Hand-written because every answer and event goes through it: Foundation's `JSONEncoder`
/// walks the value through Codable containers and was a quarter of a `service.status`
/// round trip in the benchmark. The output is byte-for-byte what `JSONCoding.encoder()`
/// gives (sorted keys, unescaped slashes, integers without a fraction).
enum JSONWriter {
    static func write(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): writeNumber(n, into: &out)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            writeMembers(members, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The members in key order. Their positions are sorted, on the stack, rather than copies of
    /// the pairs (a retain and a release each): no second lookup (and hash) of a key either.
    private static func writeMembers(_ members: [String: JSONValue], into out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: [String: JSONValue].Index.self, capacity: members.count) { storage in
            var order = storage
            var count = 0
            var index = members.startIndex
            while index != members.endIndex {
                order.initializeElement(at: count, to: index)
                count += 1
                index = members.index(after: index)
            }
            let keys = members.keys
            order.sort { keys[$0] < keys[$1] }
            for (i, position) in order.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(keys[position], into: &out)
                out.append(UInt8(ascii: ":"))
                write(members.values[position], into: &out)
            }
            _ = order.deinitialize()
        }
    }

    /// Integral values print as integers; NaN and infinity are not JSON and print as null.
    static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        if !n.isFinite {
            out.append(contentsOf: "null".utf8)
        } else if n.rounded() == n, abs(n) < 9.0e15 {
            writeInteger(Int64(n), into: &out)
        } else if !writeDecimal(n, into: &out) {
            out.append(contentsOf: n.description.utf8)
        }
    }

    /// A number of at most six decimals, as `description` prints it (its shortest form), without
    /// the general algorithm, which was the costliest step of writing `service.status`: its
    /// times are rounded to the millisecond. False, and nothing written, for any other number.
    ///
    /// Between 1e-4 and 1e9 (where `description` uses no exponent) two decimals of six places
    /// are farther apart than two neighbouring doubles, so the one that is exactly `n` is its
    /// shortest form once its trailing zeros are dropped.
    static func writeDecimal(_ n: Double, into out: inout [UInt8]) -> Bool {
        let magnitude = abs(n)
        guard magnitude >= 1e-4, magnitude < 1e9 else { return false }
        let millionths = (magnitude * 1e6).rounded()
        guard millionths / 1e6 == magnitude else { return false }
        var fraction = Int64(millionths) % 1_000_000
        guard fraction != 0 else { return false } // an integer: `writeInteger`'s
        var places = 6
        while fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        if n < 0 { out.append(UInt8(ascii: "-")) }
        writeInteger(Int64(millionths) / 1_000_000, into: &out)
        out.append(UInt8(ascii: "."))
        let start = out.count
        for _ in 0..<places {
            out.append(UInt8(ascii: "0") + UInt8(fraction % 10))
            fraction /= 10
        }
        out[start...].reverse()
        return true
    }

    /// The decimal digits of `n`, without making a String first.
    private static func writeInteger(_ n: Int64, into out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (keys, ids, paths) need no escape: copy them whole.
        let plain = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
