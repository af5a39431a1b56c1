import Wire

/// What an offline token carries besides its product: the name a person sees for the download
/// (Brightcove `kBCOVOfflineVideoManagerDisplayNameKey`), the app's own `referenceId` that every
/// event of the token loops back (TIDAL offline messages), and the URL the content was
/// downloaded from (Brightcove `kBCOVOfflineVideoOnlineSourceURLPropertyKey`). Kept in the
/// token's `offlineProducts.options` beside the HLS choice, so a restart keeps them.
struct TokenProperties: Sendable, Equatable {
    var displayName: String?
    var referenceId: String?
    var onlineSourceURL: String?

    /// The longest display name or reference id taken, in UTF-8 bytes.
    static let maxBytes = 256

    /// `value` as a display name or reference id: 1…256 UTF-8 bytes, no control characters;
    /// -32602 naming the field otherwise.
    static func checked(_ value: String?, field: String) throws -> String? {
        guard let value else { return nil }
        guard (1...maxBytes).contains(value.utf8.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw RPCError.invalidParams("params.\(field) must be 1 to \(maxBytes) bytes of text without control characters.")
        }
        return value
    }

    /// The properties kept in a token's options.
    init(options: [String: JSONValue]?) {
        displayName = options?["displayName"]?.stringValue
        referenceId = options?["referenceId"]?.stringValue
        onlineSourceURL = options?["onlineSourceURL"]?.stringValue
    }

    init(displayName: String? = nil, referenceId: String? = nil, onlineSourceURL: String? = nil) {
        self.displayName = displayName
        self.referenceId = referenceId
        self.onlineSourceURL = onlineSourceURL
    }

    /// These properties, each one not given taken from `held` (a request again for a token
    /// keeps what an earlier one named).
    func over(_ held: TokenProperties) -> TokenProperties {
        TokenProperties(
            displayName: displayName ?? held.displayName, referenceId: referenceId ?? held.referenceId,
            onlineSourceURL: onlineSourceURL ?? held.onlineSourceURL)
    }

    /// Writes the properties that are set into `options`.
    func apply(to options: inout [String: JSONValue]) {
        if let displayName { options["displayName"] = .string(displayName) }
        if let referenceId { options["referenceId"] = .string(referenceId) }
        if let onlineSourceURL { options["onlineSourceURL"] = .string(onlineSourceURL) }
    }
}
