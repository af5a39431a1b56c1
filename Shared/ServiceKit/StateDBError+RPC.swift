import StateDB
import Wire

/// A catalog failure that reaches a method's caller keeps its name: a full disk is
/// `StorageFull` (1011) in every service, whichever method was writing.
extension StateDBError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch code {
        case .storageFull: return .storageFull(message)
        case .openFailed, .schemaTooNew: return RPCError(code: -32603, name: code.rawValue, message: message)
        }
    }
}
