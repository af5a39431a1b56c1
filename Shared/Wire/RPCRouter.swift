import Foundation

/// What a method handler sees: the request and the connection it came on.
public struct RPCContext: Sendable {
    public let request: RPCRequest
    public let connection: RPCConnection

    /// Decodes `params` into a typed value. A failure becomes -32602 with a message that
    /// names the offending field, so a client in any language can fix its call.
    public func params<P: Decodable>(_ type: P.Type = P.self) throws(RPCError) -> P {
        do {
            return try JSONCoding.decode(P.self, from: request.params)
        } catch let error as DecodingError {
            throw .invalidParams(Self.describe(error, method: request.method))
        } catch {
            throw .invalidParams("Invalid params for '\(request.method)': \(error)")
        }
    }

    static func describe(_ error: DecodingError, method: String) -> String {
        func path(_ keys: [CodingKey]) -> String {
            let p = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return p.isEmpty ? "params" : "params.\(p)"
        }
        switch error {
        case .keyNotFound(let key, let ctx):
            return "'\(method)' needs \(path(ctx.codingPath + [key]))."
        case .typeMismatch(let type, let ctx):
            return "\(path(ctx.codingPath)) of '\(method)' must be \(typeName(type))."
        case .valueNotFound(let type, let ctx):
            return "\(path(ctx.codingPath)) of '\(method)' must be \(typeName(type)), not null."
        case .dataCorrupted(let ctx):
            return "\(path(ctx.codingPath)) of '\(method)' is invalid: \(ctx.debugDescription)"
        @unknown default:
            return "Invalid params for '\(method)'."
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "a boolean"
        case is Int.Type, is Int64.Type, is Double.Type, is UInt64.Type: return "a number"
        default: return "of type \(type)"
        }
    }
}

public typealias RPCMethod = @Sendable (RPCContext) async throws -> JSONValue

/// Method name → handler. Built once at start-up, then read-only.
public struct RPCRouter: Sendable {
    private var methods: [String: RPCMethod] = [:]

    public init() {}

    public var methodNames: [String] { methods.keys.sorted() }

    public mutating func register(_ name: String, _ method: @escaping RPCMethod) {
        precondition(methods[name] == nil, "method \(name) registered twice")
        methods[name] = method
    }

    /// Registers a handler that reads its params itself and takes only the keys `takes` names:
    /// any other is -32602 naming it (see `ClosedParams` for typed params).
    public mutating func register(_ name: String, takes names: [String], _ method: @escaping RPCMethod) {
        register(name) { ctx in
            try RPCError.refuseUnknownParams(ctx.request.params, method: ctx.request.method, takes: names)
            return try await method(ctx)
        }
    }

    /// Registers a handler with typed params and an `Encodable` result.
    public mutating func register<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ name: String, params: P.Type, _ body: @escaping @Sendable (P, RPCContext) async throws -> R
    ) {
        register(name) { ctx in
            let p: P = try ctx.params()
            return try JSONCoding.value(try await body(p, ctx))
        }
    }

    /// Registers a handler whose params are closed: a key it does not name is -32602.
    public mutating func register<P: ClosedParams & Sendable, R: Encodable & Sendable>(
        _ name: String, params: P.Type, _ body: @escaping @Sendable (P, RPCContext) async throws -> R
    ) {
        register(name, takes: P.paramNames) { ctx in
            let p: P = try ctx.params()
            return try JSONCoding.value(try await body(p, ctx))
        }
    }

    /// Runs the method. Every thrown error becomes a wire error: typed ones keep their name and
    /// code, anything else is an `InternalError` (-32603) that names the failure and is logged.
    public func dispatch(_ ctx: RPCContext) async -> Result<JSONValue, RPCError> {
        guard let method = methods[ctx.request.method] else {
            return .failure(.methodNotFound(ctx.request.method))
        }
        do {
            return .success(try await method(ctx))
        } catch let error as RPCErrorConvertible {
            return .failure(error.rpcError)
        } catch {
            return .failure(.internalError("The service failed to handle '\(ctx.request.method)': \(error). See the service's log."))
        }
    }
}
