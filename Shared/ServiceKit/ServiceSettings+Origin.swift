import HTTPClient
import OriginClient

extension ServiceSettings {
    /// The one way a service builds its origin client from its settings: the origin's URL, the
    /// credentials and the transport (CA file, pins, proxy); nil when no origin is configured.
    /// `configure` sets what the caller's use needs (parallel transfers, a short connect
    /// timeout). A bad origin URL is a config error (exit 78) in every service.
    public func originClient(
        requestTimeout: Double = 30, offline: @escaping @Sendable () -> Bool = { false },
        configure: (inout HTTPClient.Configuration) -> Void = { _ in }
    ) throws -> OriginClient? {
        guard let origin else { return nil }
        let credentials = clientToken.map { BasicCredentials(token: $0, secret: clientSecret ?? "") }
        var configuration = HTTPClient.Configuration()
        configuration.transport = originTransport
        configure(&configuration)
        do {
            return try OriginClient(
                baseURL: origin, credentials: credentials, configuration: configuration,
                requestTimeout: requestTimeout, offline: offline)
        } catch {
            throw DaemonError(.configInvalid, "\(error)")
        }
    }
}
