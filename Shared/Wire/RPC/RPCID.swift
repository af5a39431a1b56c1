/// A JSON-RPC request id: a number or a string, echoed back unchanged.
public enum RPCID: Sendable, Hashable, Codable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public init?(_ value: JSONValue) {
        switch value {
        case .number(let n) where n.rounded() == n && abs(n) < 9.0e15: self = .number(Int64(n))
        case .string(let s): self = .string(s)
        default: return nil
        }
    }

    public var json: JSONValue {
        switch self {
        case .number(let n): return .number(Double(n))
        case .string(let s): return .string(s)
        }
    }

    public var description: String {
        switch self {
        case .number(let n): return String(n)
        case .string(let s): return "\"\(s)\""
        }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(Int64.self) { self = .number(n) } else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        }
    }
}
