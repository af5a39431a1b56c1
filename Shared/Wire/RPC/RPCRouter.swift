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

/// The part of a method that can answer on the spot, on the connection's event loop, without a
/// task: it reads what it needs under locks (never blocks, never awaits) and returns the answer,
/// or nil to leave the call to the method's ordinary, async part.
public typealias RPCImmediateMethod = @Sendable (RPCContext) throws -> JSONValue?

/// Method name → handler. Built once at start-up, then read-only.
public struct RPCRouter: Sendable {
    private struct Entry: Sendable {
        var now: RPCImmediateMethod?
        var later: RPCMethod
    }
    private var methods: [String: Entry] = [:]

    public init() {}

    public var methodNames: [String] { methods.keys.sorted() }

    public mutating func register(_ name: String, _ method: @escaping RPCMethod) {
        precondition(methods[name] == nil, "method \(name) registered twice")
        methods[name] = Entry(later: method)
    }

    /// Registers a method that takes only the params `takes` names and answers with `now` when
    /// it can, else with `later`. A task per call costs a few microseconds and, for a method that
    /// awaits nothing, nothing is gained by it: `service.status` answers this way.
    public mutating func register(
        _ name: String, takes names: [String], now: @escaping RPCImmediateMethod,
        later: @escaping RPCMethod
    ) {
        register(name, takes: names, later)
        methods[name]?.now = { ctx in
            try RPCError.refuseUnknownParams(ctx.request.params, method: ctx.request.method, takes: names)
            return try now(ctx)
        }
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
        guard let entry = methods[ctx.request.method] else {
            return .failure(.methodNotFound(ctx.request.method))
        }
        do {
            return .success(try await entry.later(ctx))
        } catch {
            return .failure(Self.wireError(error, method: ctx.request.method))
        }
    }

    /// The answer when it is known without awaiting anything: an unknown method, or one whose
    /// immediate part answered. nil: run `dispatch` in a task.
    public func answerNow(_ ctx: RPCContext) -> Result<JSONValue, RPCError>? {
        guard let entry = methods[ctx.request.method] else {
            return .failure(.methodNotFound(ctx.request.method))
        }
        guard let now = entry.now else { return nil }
        do {
            return try now(ctx).map { .success($0) }
        } catch {
            return .failure(Self.wireError(error, method: ctx.request.method))
        }
    }

    private static func wireError(_ error: any Error, method: String) -> RPCError {
        if let error = error as? RPCErrorConvertible { return error.rpcError }
        return .internalError("The service failed to handle '\(method)': \(error). See the service's log.")
    }
}
