/// Params of a method that names every parameter it takes: any other key is refused with
/// -32602 `InvalidParams` naming it, so a misspelt or unsupported option (`bitrate` for
/// `quality`) is never silently ignored. `RPCRouter.register` checks it before decoding.
///
/// The names are the type's own `CodingKeys` (declared `CaseIterable`), the same keys its
/// decoding uses: a parameter is named once.
public protocol ClosedParams: Decodable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

extension ClosedParams {
    /// Every parameter the method accepts, optional ones included.
    public static var paramNames: [String] { CodingKeys.allCases.map(\.stringValue) }
}

extension RPCError {
    /// -32602 naming the keys of `params` that are not among `names` (what `method` takes).
    static func refuseUnknownParams(_ params: JSONValue, method: String, takes names: [String]) throws(RPCError) {
        guard let keys = params.objectValue?.keys else { return }
        let unknown = keys.filter { !names.contains($0) }.sorted()
        guard !unknown.isEmpty else { return }
        let listed = unknown.map { "params.\($0)" }.joined(separator: ", ")
        let known = names.isEmpty ? "it takes no params" : "it takes \(names.sorted().joined(separator: ", "))"
        throw .invalidParams("\(listed) \(unknown.count == 1 ? "is not a parameter" : "are not parameters") of '\(method)'; \(known).")
    }
}
