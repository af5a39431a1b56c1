/// The wire errors more than one service returns, each with its code and stable name defined
/// once: the shared part of every service's error table.
public struct RPCErrorKind: Sendable, Equatable {
    public let code: Int
    public let name: String

    public init(code: Int, name: String) {
        self.code = code
        self.name = name
    }

    public func error(_ message: String, details: [String: JSONValue] = [:]) -> RPCError {
        RPCError(code: code, name: name, message: message, details: details)
    }

    /// A call that needs the content origin could not reach it within the call's deadline: no
    /// connection, no answer in time, or only 5xx answers (docs/protocol.md: within 10 s).
    public static let originUnreachable = RPCErrorKind(code: 1010, name: "OriginUnreachable")

    /// The disk holding the catalog (or the downloader's media folder) is full; nothing of the
    /// call was kept. The one name for a full disk in every service.
    public static let storageFull = RPCErrorKind(code: 1011, name: "StorageFull")

    /// The app is in offline mode (`offlineMode`): a call that needs the content origin was not
    /// sent at all. Turning offline mode off lets it through again.
    public static let offlineMode = RPCErrorKind(code: 1012, name: "OfflineMode")

    /// The origin's TLS edge was refused: its certificate is not trusted (CA, name, validity),
    /// its public key matches no pin, or the handshake failed. Not a network outage: the
    /// message says what to check (`originCAFile`, `originPinnedPublicKey`, the device clock).
    public static let tlsFailed = RPCErrorKind(code: 1013, name: "TLSFailed")

    /// The service is stopping (SIGTERM) and gave up on this request; its effects so far stay.
    public static let shuttingDown = RPCErrorKind(code: -32603, name: "ShuttingDown")

    /// The numbered errors every service shares, for the check against docs/protocol.md.
    public static let numbered: [RPCErrorKind] = [originUnreachable, storageFull, offlineMode, tlsFailed]
}
