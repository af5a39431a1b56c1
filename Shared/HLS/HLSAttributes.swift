/// An attribute list (RFC 8216 4.2): `NAME=value` pairs separated by commas, where a value is a
/// quoted string (no escapes, no line breaks, no `"`), or an unquoted token (a number, a hex
/// sequence, a resolution or an enumerated string). Names are `[A-Z0-9-]+`, each at most once.
struct HLSAttributes {
    private(set) var values: [String: Value] = [:]

    enum Value: Equatable {
        case quoted(String)
        case token(String)
    }

    init(_ text: Substring, line: Int) throws {
        var rest = text[...]
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else {
                throw HLSError(.badAttributeList, line: line, "attribute without '=' in \(Self.quote(rest))")
            }
            let name = rest[..<equals]
            guard !name.isEmpty, name.utf8.allSatisfy({ (65...90).contains($0) || (48...57).contains($0) || $0 == 45 }) else {
                throw HLSError(.badAttributeList, line: line, "attribute name \(Self.quote(name)) is not [A-Z0-9-]+")
            }
            rest = rest[rest.index(after: equals)...]
            let value: Value
            if rest.first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "\"") else {
                    throw HLSError(.badAttributeList, line: line, "unterminated quoted string for \(name)")
                }
                value = .quoted(String(body[..<close]))
                rest = body[body.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                let token = rest[..<end]
                guard !token.isEmpty, !token.contains("\""), !token.contains(" ") else {
                    throw HLSError(.badAttributeList, line: line, "value of \(name) is empty or malformed")
                }
                value = .token(String(token))
                rest = rest[end...]
            }
            guard values[String(name)] == nil else {
                throw HLSError(.badAttributeList, line: line, "attribute \(name) given twice")
            }
            values[String(name)] = value
            if rest.first == "," {
                rest = rest.dropFirst()
                guard !rest.isEmpty else { throw HLSError(.badAttributeList, line: line, "trailing comma") }
            } else if !rest.isEmpty {
                throw HLSError(.badAttributeList, line: line, "expected ',' after \(name)")
            }
        }
    }

    private static func quote<S: StringProtocol>(_ text: S) -> String { String(text.prefix(60)).debugDescription }

    func string(_ name: String, line: Int) throws -> String? {
        switch values[name] {
        case nil: return nil
        case .quoted(let text)?: return text
        case .token?: throw HLSError(.badValue, line: line, "\(name) must be a quoted string")
        }
    }

    func requiredString(_ name: String, line: Int) throws -> String {
        guard let value = try string(name, line: line) else { throw HLSError(.missingAttribute, line: line, "\(name) is required") }
        return value
    }

    func enumerated(_ name: String, line: Int) throws -> String? {
        switch values[name] {
        case nil: return nil
        case .token(let text)?: return text
        case .quoted?: throw HLSError(.badValue, line: line, "\(name) must not be quoted")
        }
    }

    func integer(_ name: String, line: Int) throws -> Int? {
        guard let text = try enumerated(name, line: line) else { return nil }
        guard text.utf8.count <= 18, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
            throw HLSError(.badValue, line: line, "\(name)=\(text.prefix(40)) is not a decimal integer")
        }
        return value
    }

    func decimal(_ name: String, line: Int) throws -> Double? {
        guard let text = try enumerated(name, line: line) else { return nil }
        guard let value = HLSNumber.decimal(text), value >= 0 else {
            throw HLSError(.badValue, line: line, "\(name)=\(text.prefix(40)) is not a non-negative decimal")
        }
        return value
    }

    func yesNo(_ name: String, line: Int) throws -> Bool? {
        guard let text = try enumerated(name, line: line) else { return nil }
        switch text {
        case "YES": return true
        case "NO": return false
        default: throw HLSError(.badValue, line: line, "\(name) must be YES or NO")
        }
    }
}

enum HLSNumber {
    /// A decimal floating-point number as RFC 8216 writes them: digits, an optional fraction.
    static func decimal<S: StringProtocol>(_ text: S) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        var dots = 0
        for byte in text.utf8 {
            if byte == 46 { dots += 1 } else if !(48...57).contains(byte) { return nil }
        }
        guard dots <= 1, text.first != ".", text.last != "." else { return nil }
        return Double(String(text))
    }

    /// `0x` followed by an even number of hex digits.
    static func hexBytes(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("0x") || text.hasPrefix("0X") else { return nil }
        let digits = Array(text.utf8.dropFirst(2))
        guard !digits.isEmpty, digits.count % 2 == 0, digits.count <= 64 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }
        var bytes: [UInt8] = []
        var i = 0
        while i < digits.count {
            guard let high = nibble(digits[i]), let low = nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return bytes
    }
}
