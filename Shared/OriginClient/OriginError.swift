import HTTPClient
import Wire

/// A request to the origin that did not succeed, named as docs/origin.md and docs/protocol.md
/// name it, so a device app can tell "not in this country" from "server down" without parsing text.
/// Codes 4000–4999 mirror the origin: the subStatus itself when it lies in 4000–4999, else 4000 +
/// the HTTP status; 4001 is our own (unreadable answer). `OriginUnreachable` is the wire's 1010
/// (`RPCErrorKind.originUnreachable`), whatever status the last answer had; `TLSFailed` is 1013
/// (`RPCErrorKind.tlsFailed`): the TLS edge answered but was refused.
public struct OriginError: Error, Sendable, Equatable, CustomStringConvertible, RPCErrorConvertible {
    public var name: String
    public var message: String
    /// The HTTP status, nil when no answer came.
    public var status: Int?
    public var subStatus: Int?
    /// The transport failure's own name (e.g. "ConnectionFailed") when no answer came.
    public var transportError: String?
    /// The refusal's JSON body when it had one, for fields beyond the error's own (a 409 of a
    /// streaming heartbeat names the device that took over in `otherDevice`).
    public var answer: JSONValue?

    public init(name: String, message: String, status: Int? = nil, subStatus: Int? = nil, transportError: String? = nil) {
        self.name = name
        self.message = message
        self.status = status
        self.subStatus = subStatus
        self.transportError = transportError
    }

    public var code: Int {
        if name == RPCErrorKind.originUnreachable.name { return RPCErrorKind.originUnreachable.code }
        if name == RPCErrorKind.offlineMode.name { return RPCErrorKind.offlineMode.code }
        if name == RPCErrorKind.tlsFailed.name { return RPCErrorKind.tlsFailed.code }
        if let subStatus, (4000..<5000).contains(subStatus) { return subStatus }
        if let status, (400..<600).contains(status) { return 4000 + status }
        return name == Self.badResponseName ? 4001 : 4000
    }

    public var description: String { "\(name): \(message)" }

    /// The origin could not be reached or kept failing (no connection, a timeout, 5xx, 429, a
    /// TLS failure): a condition of the origin or the link that passes, unlike a refusal of the
    /// request.
    public var isOriginFailing: Bool {
        if transportError != nil || name == RPCErrorKind.originUnreachable.name { return true }
        guard let status else { return false }
        return (500..<600).contains(status) || status == 429
    }

    public var rpcError: RPCError {
        var details: [String: JSONValue] = [:]
        if let status { details["status"] = .number(Double(status)) }
        if let subStatus { details["subStatus"] = .number(Double(subStatus)) }
        if let transportError { details["transportError"] = .string(transportError) }
        return RPCError(code: code, name: name, message: message, details: details)
    }

    static let badResponseName = "BadOriginResponse"
    /// The origin refused the device's credentials (401, or 403 with subStatus 6001): code 4401
    /// or 4403 like any 4xx, named so a device can tell "fix the token" from "not allowed".
    public static let unauthorizedName = "Unauthorized"

    /// Whether this is the origin refusing the configured credentials.
    public var isUnauthorized: Bool { name == Self.unauthorizedName }

    /// The origin refused the request for what it asks (a 4xx other than wrong credentials and
    /// 429): about one product or station, not about the device or the link.
    public var refusesProduct: Bool {
        guard let status, (400..<500).contains(status) else { return false }
        return status != 429 && !isUnauthorized
    }

    /// The origin answered with an error status: name it from `subStatus` as the contract says.
    public init(status: Int, body: [UInt8]) {
        let json = try? JSONValue.parse(body)
        let subStatus = json?["subStatus"]?.intValue
        let userMessage = json?["userMessage"]?.stringValue
        self.init(
            name: Self.name(status: status, subStatus: subStatus),
            message: userMessage ?? "the origin answered HTTP \(status)",
            status: status, subStatus: subStatus)
        if name == Self.unauthorizedName { message += " (check the client token and secret in the configuration)" }
    }

    /// The origin could not be reached or the transfer broke off, after the retries allowed;
    /// or its TLS edge was refused (`TLSFailed`, saying what to check).
    public init(transport error: HTTPClientError) {
        if let failure = error.tlsFailure {
            self.init(
                name: RPCErrorKind.tlsFailed.name, message: Self.tlsMessage(failure, error.message),
                transportError: error.name)
            return
        }
        self.init(
            name: RPCErrorKind.originUnreachable.name,
            message: "the origin could not be reached: \(error.message). Check the network and the origin URL.",
            transportError: error.name)
    }

    /// A TLS failure (`TLSFailed`): the edge is up, but the device refused it or it refused the
    /// device. Retried like an unreachable origin, no sooner than `RetryPolicy.tlsRetrySeconds`.
    public var isTLSFailure: Bool { name == RPCErrorKind.tlsFailed.name }

    /// The config keys and the clock first where they are the likely cause.
    private static func tlsMessage(_ failure: HTTPClientError.TLSFailure, _ detail: String) -> String {
        switch failure {
        case .pinnedKey:
            return "the origin's TLS public key matches none pinned in originPinnedPublicKey: \(detail). "
                + "Check the pin (originPinnedPublicKey) against the edge's current key; the CA file (originCAFile) and the clock are not the cause."
        case .caFile:
            return "the CA file could not be used for the origin's TLS: \(detail). Check originCAFile: a readable PEM bundle of the CA certificates."
        case .certificate:
            return "the origin's TLS certificate is not trusted: \(detail). Check the CA file (originCAFile; the system's CA store without it), "
                + "that the origin URL names the certificate's host, the device clock (a certificate is valid only between two dates), "
                + "and the pin (originPinnedPublicKey)."
        case .handshake:
            return "the TLS handshake with the origin failed: \(detail). Check that the origin URL's port speaks TLS, the CA file (originCAFile), "
                + "the pin (originPinnedPublicKey) and the device clock."
        }
    }

    /// The origin kept answering with a server error (5xx) until the call's deadline.
    static func unreachable(status: Int, body: [UInt8], after seconds: Double) -> OriginError {
        let answer = OriginError(status: status, body: body)
        return OriginError(
            name: RPCErrorKind.originUnreachable.name,
            message: "the origin answered only HTTP \(status) for \(Int(seconds.rounded())) s (\(answer.message)). Try again later.",
            status: status, subStatus: answer.subStatus)
    }

    /// Not sent: the app is in offline mode. Counted as the origin failing (`transportError`
    /// set), so what answers from the catalog when the origin is away does so here too.
    public static func offlineMode() -> OriginError {
        OriginError(
            name: RPCErrorKind.offlineMode.name,
            message: "the app is in offline mode, so nothing is sent to the origin; turn offlineMode off to go online",
            transportError: RPCErrorKind.offlineMode.name)
    }

    /// Nothing usable came within the call's deadline.
    static func deadlinePassed(after seconds: Double) -> OriginError {
        OriginError(
            name: RPCErrorKind.originUnreachable.name,
            message: "the origin did not answer within \(Int(seconds.rounded())) s. Check the network and the origin URL.",
            transportError: HTTPClientError.Code.timeout.name)
    }

    static func badResponse(_ message: String) -> OriginError {
        OriginError(name: badResponseName, message: "the origin sent an answer Cassette cannot use: \(message)")
    }

    /// docs/origin.md, "Errors": 4032/4035, 4033, 4010, 4007, other 4xx; 5xx and 429 once retries ran out.
    static func name(status: Int, subStatus: Int?) -> String {
        switch subStatus {
        case 4032, 4035: return "ContentNotAvailableInLocation"
        case 4033: return "ContentNotAvailableForSubscription"
        case 4010: return "MonthlyStreamQuotaExceeded"
        case 4007: return "OffliningNotAllowedOnDevice"
        default: break
        }
        if status == 401 || (status == 403 && subStatus == 6001) { return unauthorizedName }
        switch status {
        case 404: return "NotFound"
        case 429: return "TooManyRequests"
        case 500..<600: return "OriginServerError"
        default: return "NotAllowed"
        }
    }
}
