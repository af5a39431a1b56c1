import Foundation

extension HTTPClient {
    /// How the client reaches an HTTPS edge: the certificates it trusts, the public keys it
    /// accepts and the proxy it goes through. Every request of the client uses it, redirects
    /// included. Each transfer also offers HTTP/2 over TLS (ALPN), falling back to HTTP/1.1.
    public struct Transport: Sendable, Equatable {
        /// A PEM bundle of CA certificates that replaces the system's store (`CURLOPT_CAINFO`,
        /// with `CURLOPT_CAPATH` unset): only these are trusted. nil: the system's store.
        public var caFile: String?
        /// `sha256//BASE64` public key hashes, several separated by `;` (curl's
        /// `--pinnedpubkey`): a server whose key matches none is refused (`CURLOPT_PINNEDPUBLICKEY`).
        public var pinnedPublicKey: String?
        /// `http://`, `https://`, `socks5://` or `socks5h://` proxy URL (`CURLOPT_PROXY`). nil:
        /// libcurl reads `https_proxy`, `http_proxy`, `all_proxy` and `no_proxy` from the
        /// environment; this setting, when given, wins over them (`no_proxy` still applies).
        public var proxy: String?

        public init(caFile: String? = nil, pinnedPublicKey: String? = nil, proxy: String? = nil) {
            self.caFile = caFile
            self.pinnedPublicKey = pinnedPublicKey
            self.proxy = proxy
        }

        /// What is wrong with each setting, checked without libcurl (a daemon checks at start
        /// and opens libcurl only when it first talks to the network): the CA file must be a
        /// readable file holding at least one PEM certificate, each pin `sha256//` and the
        /// base64 of 32 bytes, the proxy an absolute URL of a supported scheme with a host.
        public func problems() -> [Problem] {
            var found: [Problem] = []
            if let caFile, let why = Self.caFileProblem(caFile) { found.append(Problem(field: .caFile, message: why)) }
            if let pinnedPublicKey, let why = Self.pinProblem(pinnedPublicKey) { found.append(Problem(field: .pinnedPublicKey, message: why)) }
            if let proxy, let why = Self.proxyProblem(proxy) { found.append(Problem(field: .proxy, message: why)) }
            return found
        }

        /// One setting's problem.
        public struct Problem: Sendable, Equatable {
            public enum Field: Sendable, Equatable { case caFile, pinnedPublicKey, proxy }
            public var field: Field
            public var message: String
        }

        /// The schemes `proxy` may have: what libcurl's proxy support takes and the origin's
        /// contract names (`socks5h` resolves the origin's name at the proxy, `socks5` locally).
        public static let proxySchemes = ["http", "https", "socks5", "socks5h"]

        static func caFileProblem(_ path: String) -> String? {
            guard path.hasPrefix("/") else { return "must be an absolute path, got \(path.debugDescription)" }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "\(path) does not exist" }
            guard !isDirectory.boolValue else { return "\(path) is a directory; give a PEM file of CA certificates" }
            guard let data = FileManager.default.contents(atPath: path) else { return "\(path) cannot be read" }
            guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                return "\(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
            }
            return nil
        }

        static func pinProblem(_ value: String) -> String? {
            let pins = value.split(separator: ";", omittingEmptySubsequences: false)
            for pin in pins {
                guard pin.hasPrefix("sha256//") else {
                    return "each pin must be sha256//BASE64 (several separated by ; without spaces), got \(String(pin).debugDescription)"
                }
                let encoded = pin.dropFirst("sha256//".count)
                guard let digest = Data(base64Encoded: String(encoded)), digest.count == 32 else {
                    return "\(String(pin).debugDescription) is not the base64 of a 32-byte SHA-256 digest"
                }
            }
            return nil
        }

        static func proxyProblem(_ value: String) -> String? {
            let usage = "must be a URL such as http://proxy.example:3128, https://… or socks5h://…"
            guard let schemeEnd = value.range(of: "://") else { return "\(usage), got \(value.debugDescription)" }
            let scheme = value[..<schemeEnd.lowerBound].lowercased()
            guard proxySchemes.contains(scheme) else {
                return "scheme \(scheme.debugDescription) is not one of \(proxySchemes.joined(separator: ", "))"
            }
            var authority = value[schemeEnd.upperBound...]
            if let slash = authority.firstIndex(of: "/") {
                guard authority[slash...].allSatisfy({ $0 == "/" }) else { return "\(usage), without a path" }
                authority = authority[..<slash]
            }
            if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
            guard !authority.isEmpty, !authority.hasPrefix(":"), !value.contains(where: \.isWhitespace) else {
                return "\(usage), got \(value.debugDescription)"
            }
            if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
                let port = authority[authority.index(after: colon)...]
                guard let number = Int(port), (1...65535).contains(number) else { return "port \(String(port).debugDescription) is not 1–65535" }
            }
            return nil
        }
    }
}
