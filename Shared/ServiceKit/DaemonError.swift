import Wire

/// Why a service could not start or keep running. Names are stable and appear in logs.
public struct DaemonError: Error, Sendable, CustomStringConvertible, RPCErrorConvertible {
    public enum Code: String, Sendable {
        case configInvalid = "ConfigInvalid"
        case alreadyRunning = "AlreadyRunning"
        case socketUnavailable = "SocketUnavailable"
        case catalogUnavailable = "CatalogUnavailable"
    }
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// sysexits(3) codes, so a unit's `RestartPreventExitStatus=` can tell config errors apart.
    public var exitCode: Int32 {
        switch code {
        case .configInvalid: return 78 // EX_CONFIG
        case .alreadyRunning: return 75 // EX_TEMPFAIL
        case .socketUnavailable: return 71 // EX_OSERR
        case .catalogUnavailable: return 74 // EX_IOERR
        }
    }

    public var rpcError: RPCError {
        RPCError(code: -32603, name: code.rawValue, message: message)
    }
}
