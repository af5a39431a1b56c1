/// An error as it travels on the wire: a numeric JSON-RPC code plus a stable name in
/// `error.data.name` that clients match on. Names never change once shipped.
///
/// Code ranges (docs/protocol.md, "Errors"): -32xxx JSON-RPC standard, 1000–1999 downloader,
/// 2000–2999 player, 3000–3999 reporter, 4000–4999 mirrored from the origin's subStatus.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var name: String
    /// What went wrong and what to do, for a person.
    public var message: String
    /// Extra machine-readable fields merged into `error.data` next to `name`.
    public var details: [String: JSONValue]

    public init(code: Int, name: String, message: String, details: [String: JSONValue] = [:]) {
        self.code = code
        self.name = name
        self.message = message
        self.details = details
    }

    public var description: String { "\(name) (\(code)): \(message)" }

    public var json: JSONValue {
        var data = details
        data["name"] = .string(name)
        return ["code": .number(Double(code)), "message": .string(message), "data": .object(data)]
    }

    /// Appends `json`'s bytes (as `JSONWriter` writes them) to `out`. An error without details,
    /// the usual kind, is written in place, keys in sorted order (code < data < message),
    /// without building its two dictionaries.
    func write(into out: inout [UInt8]) {
        guard details.isEmpty else {
            JSONWriter.write(json, into: &out)
            return
        }
        out.append(contentsOf: "{\"code\":".utf8)
        JSONWriter.writeNumber(Double(code), into: &out)
        out.append(contentsOf: ",\"data\":{\"name\":".utf8)
        JSONWriter.writeString(name, into: &out)
        out.append(contentsOf: "},\"message\":".utf8)
        JSONWriter.writeString(message, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSONValue) {
        guard let code = json["code"]?.intValue else { return nil }
        var details = json["data"]?.objectValue ?? [:]
        let name = details.removeValue(forKey: "name")?.stringValue ?? "Unknown"
        self.init(code: code, name: name, message: json["message"]?.stringValue ?? "", details: details)
    }
}

extension RPCError {
    public static func parseError(_ message: String) -> RPCError {
        RPCError(code: -32700, name: "ParseError", message: message)
    }
    public static func invalidRequest(_ message: String, name: String = "InvalidRequest") -> RPCError {
        RPCError(code: -32600, name: name, message: message)
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(
            code: -32601, name: "MethodNotFound",
            message: "No method '\(method)' on this service. Check the method name against docs/protocol.md.")
    }
    public static func invalidParams(_ message: String) -> RPCError {
        RPCError(code: -32602, name: "InvalidParams", message: message)
    }
    /// The one error every service answers when a write found its disk full (the catalog's or
    /// the media folder's): nothing of the call was kept; free space and call again.
    public static func storageFull(_ message: String) -> RPCError {
        RPCErrorKind.storageFull.error(message)
    }

    public static func internalError(_ message: String) -> RPCError {
        RPCError(code: -32603, name: "InternalError", message: message)
    }
}

/// Errors thrown by service code that know their wire form.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError: RPCErrorConvertible {
    public var rpcError: RPCError { self }
}
