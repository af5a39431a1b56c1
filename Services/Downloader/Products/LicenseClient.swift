import Foundation
import HTTPClient
import OriginClient
import Wire

/// A license as the origin granted it (`POST /v1/licenses`), with its content keys.
struct GrantedLicense: Sendable, Equatable {
    var id: String
    var terms: LicenseTerms
    /// The server's time when it granted the license: a rental's clock starts here.
    var requestedAt: Date
    /// nil for a purchase.
    var expiresAt: Date?
    /// keyId → the 16 raw AES-128 key bytes.
    var keys: [String: [UInt8]]
}

/// Asks the origin for licenses and their keys (Brightcove "purchase or rental", HLS AES-128).
/// Nothing here writes the catalog: the caller stores the license in the same transaction as
/// whatever it licenses, so a license never outlives a request that failed.
struct LicenseClient: Sendable {
    let origin: OriginClient
    let now: @Sendable () async -> Date

    /// Requests a license for `productId` under `terms`, with the security token and key ids its
    /// playbackinfo `info` names.
    func request(
        productId: String, playbackInfo info: JSONValue, terms: LicenseTerms,
        retry: RetryPolicy = .offlining
    ) async throws -> GrantedLicense {
        try await request(
            productId: productId, securityToken: Self.securityToken(info), terms: terms,
            keyIds: info["keyIds"]?.arrayValue?.compactMap(\.stringValue) ?? [], retry: retry)
    }

    /// A playbackinfo's `licenseSecurityToken`: content that needs a license (TIDAL).
    static func securityToken(_ info: JSONValue) -> String? {
        info["licenseSecurityToken"]?.stringValue
    }

    /// Requests a license for `productId` under `terms`; `keyIds` (from playbackinfo) the keys the
    /// content needs: any the answer does not carry are fetched with `GET /v1/keys/{keyId}`.
    func request(
        productId: String, securityToken: String?, terms: LicenseTerms, keyIds: [String],
        retry: RetryPolicy = .offlining
    ) async throws -> GrantedLicense {
        var body: [String: JSONValue] = [
            "productId": .string(productId), "kind": .string(terms.kind),
            "securityToken": securityToken.map(JSONValue.string) ?? .null,
        ]
        if let seconds = terms.rentalSeconds { body["rentalSeconds"] = .number(Double(seconds)) }
        let answer = try await origin.post("/v1/licenses", body: .object(body), retry: retry)
        guard let id = answer["licenseId"]?.stringValue, OriginID.isValid(id) else {
            throw DownloaderError.hostileManifest("the license answer has no usable licenseId")
        }
        let expiresAt = answer["expiresAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339)
        if case .rental = terms, expiresAt == nil {
            throw DownloaderError.hostileManifest("the rental license \(id) has no expiresAt")
        }
        var keys: [String: [UInt8]] = [:]
        for (keyId, value) in answer["keys"]?.objectValue ?? [:] {
            guard OriginID.isValid(keyId), let text = value.stringValue, let data = Data(base64Encoded: text), data.count == 16 else {
                throw DownloaderError.hostileManifest("key \(keyId.prefix(140).debugDescription) of license \(id) is not 16 base64 bytes")
            }
            keys[keyId] = Array(data)
        }
        for keyId in keyIds where keys[keyId] == nil {
            keys[keyId] = try await fetchKey(keyId, licenseId: id, retry: retry)
        }
        var requestedAt = answer["serverTime"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339)
        if requestedAt == nil { requestedAt = await now() }
        return GrantedLicense(id: id, terms: terms, requestedAt: requestedAt ?? Date(), expiresAt: expiresAt, keys: keys)
    }

    /// `GET /v1/keys/{keyId}` with `X-License`: the key bytes the license entitles to.
    func fetchKey(_ keyId: String, licenseId: String, retry: RetryPolicy = .offlining) async throws -> [UInt8] {
        guard OriginID.isValid(keyId) else { throw DownloaderError.hostileManifest("key id \(keyId.prefix(140).debugDescription) is not a plain token") }
        let request = HTTPRequest(method: "GET", url: try origin.resolveURL("/v1/keys/\(keyId)"), headers: ["X-License": licenseId])
        let response = try await origin.send(request, retry: retry)
        guard (200..<300).contains(response.status) else { throw OriginError(status: response.status, body: response.body) }
        guard response.body.count == 16 else {
            throw DownloaderError.hostileManifest("key \(keyId) is \(response.body.count) bytes, not 16")
        }
        return response.body
    }
}
