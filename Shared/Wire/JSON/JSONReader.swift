/// Parses UTF-8 bytes into a `JSONValue` (RFC 8259, one value, surrounding whitespace only).
///
/// Hand-written for the same reason as `JSONWriter`: every request and every answer a
/// client reads passes through it, and decoding into an enum through Codable makes the
/// decoder try and fail each case in turn. Nesting is capped so a hostile frame of a
/// million `[` cannot exhaust the stack.
struct JSONReader {
    static let maxDepth = 512

    struct Failure: Error, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "\(reason) at byte \(offset)" }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0

    static func parse<C: Collection>(_ input: C) throws(Failure) -> JSONValue where C.Element == UInt8 {
        try read(input) { (reader) throws(Failure) in try reader.value(depth: 0) }
    }

    /// The members of a JSON-RPC envelope, each as the last occurrence of its key (as in
    /// `parse`'s dictionary); nil when absent.
    struct Envelope {
        var jsonrpc: JSONValue?
        var id: JSONValue?
        var method: JSONValue?
        var params: JSONValue?
    }

    /// Reads one JSON value exactly as `parse` does, with the same failures at the same
    /// offsets, but keeps of a top-level object only the envelope's members: a request then
    /// builds no dictionary of its own, only its `params`. nil when the value is not an object.
    static func envelope<C: Collection>(_ input: C) throws(Failure) -> Envelope? where C.Element == UInt8 {
        try read(input) { (reader) throws(Failure) -> Envelope? in
            guard reader.i < reader.bytes.count, reader.bytes[reader.i] == UInt8(ascii: "{") else {
                _ = try reader.value(depth: 0)
                return nil
            }
            var envelope = Envelope()
            try reader.members(depth: 0) { key, member in
                switch key {
                case "jsonrpc": envelope.jsonrpc = member
                case "id": envelope.id = member
                case "method": envelope.method = member
                case "params": envelope.params = member
                default: break
                }
            }
            return envelope
        }
    }

    /// Runs `body` over the whole input, which must hold one value with whitespace around it
    /// and nothing after. Contiguous input (an array, a frame's bytes) is read in place; only
    /// other collections are copied.
    private static func read<C: Collection, T>(
        _ input: C, _ body: (inout JSONReader) throws(Failure) -> T
    ) throws(Failure) -> T where C.Element == UInt8 {
        if let parsed = input.withContiguousStorageIfAvailable({ buffer in
            Result { () throws(Failure) -> T in try read(buffer: buffer, body) }
        }) {
            return try parsed.get()
        }
        return try Array(input).withUnsafeBufferPointer { (buffer) throws(Failure) in try read(buffer: buffer, body) }
    }

    private static func read<T>(
        buffer: UnsafeBufferPointer<UInt8>, _ body: (inout JSONReader) throws(Failure) -> T
    ) throws(Failure) -> T {
        var reader = JSONReader(bytes: buffer)
        reader.skipWhitespace()
        let value = try body(&reader)
        reader.skipWhitespace()
        guard reader.i == buffer.count else { throw reader.fail("unexpected data after the value") }
        return value
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private func fail(_ reason: String) -> Failure { Failure(offset: i, reason: reason) }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth)") }
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard i + count <= bytes.count else { throw fail("unexpected end of input") }
        for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
        i += count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        var members: [String: JSONValue] = [:]
        try self.members(depth: depth) { key, value in members[key] = value }
        return .object(members)
    }

    /// Reads an object from its `{`, handing each member to `take` in the order written (a key
    /// that repeats is handed again, so whoever keeps members keeps the last).
    private mutating func members(depth: Int, _ take: (String, JSONValue) -> Void) throws(Failure) {
        i += 1
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return
        }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipWhitespace()
            take(key, try value(depth: depth + 1))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if bytes[i] == UInt8(ascii: "}") {
                i += 1
                return
            }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func number() throws(Failure) -> Double {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid number") }
        if bytes[i] == UInt8(ascii: "0") { i += 1 } else { while i < bytes.count, isDigit(bytes[i]) { i += 1 } }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid number") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid number") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let n = Double(text), n.isFinite else { throw Failure(offset: start, reason: "number out of range") }
        return n
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func string() throws(Failure) -> String {
        i += 1
        // Most strings (keys, method names, ids) hold no escape: made straight from the frame.
        var end = i
        var ascii = true
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
            ascii = ascii && bytes[end] < 0x80
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let raw = UnsafeBufferPointer(rebasing: bytes[i..<end])
            // ASCII needs no validation; `String(validating:)`, generic, looks up type metadata
            // on every call, which showed in the profile of a request.
            guard let s = ascii ? String(decoding: raw, as: UTF8.self) : String(validating: raw, as: UTF8.self) else {
                throw fail("invalid UTF-8 in string")
            }
            i = end + 1
            return s
        }
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""):
                i += 1
                // Invalid UTF-8 is refused before parsing (frames) or here (other callers).
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                return s
            case UInt8(ascii: "\\"):
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try unicodeEscape(into: &out)
                default: throw fail("invalid escape")
                }
            case 0..<0x20:
                throw fail("control character in string")
            default:
                out.append(b)
                i += 1
            }
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    /// `\uXXXX`, joining a UTF-16 surrogate pair; a lone surrogate is refused.
    private mutating func unicodeEscape(into out: inout [UInt8]) throws(Failure) {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                throw fail("lone surrogate in \\u escape")
            }
            i += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid surrogate pair") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("lone surrogate in \\u escape")
        }
        guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
        out.append(contentsOf: Array(String(Character(u)).utf8))
    }
}
