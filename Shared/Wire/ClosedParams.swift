/// Params of a method that names every parameter it takes: any other key is refused with
/// -32602 `InvalidParams` naming it, so a misspelt or unsupported option (`bitrate` for
/// `quality`) is never silently ignored. `RPCRouter.register` checks it before decoding.
public protocol ClosedParams: Decodable {
    /// Every parameter the method accepts, optional ones included.
    static var paramNames: [String] { get }
}

extension ClosedParams {
    /// -32602 for the first keys of `params` the method does not take.
    static func refuseUnknown(_ params: JSONValue, method: String) throws(RPCError) {
        guard let keys = params.objectValue?.keys else { return }
        let unknown = keys.filter { !paramNames.contains($0) }.sorted()
        guard !unknown.isEmpty else { return }
        let names = unknown.map { "params.\($0)" }.joined(separator: ", ")
        let known = paramNames.isEmpty ? "it takes no params" : "it takes \(paramNames.sorted().joined(separator: ", "))"
        throw .invalidParams("\(names) \(unknown.count == 1 ? "is not a parameter" : "are not parameters") of '\(method)'; \(known).")
    }
}
