import Wire

// The content catalog's entries as `/v1/catalog/…` carries them (docs/origin.md, "Content
// catalog"): one definition for the reference origin, which writes them, and the downloader,
// which reads them (checking each as hostile input first).

/// A source (provider).
public struct CatalogSource: Sendable, Equatable {
    public var id: String
    public var name: String
    public var description: String?

    public init(id: String, name: String, description: String? = nil) {
        (self.id, self.name, self.description) = (id, name, description)
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = ["id": .string(id), "name": .string(name)]
        if let description { fields["description"] = .string(description) }
        return .object(fields)
    }
}

/// A category; `parentId` nests it under another.
public struct CatalogCategory: Sendable, Equatable {
    public var id: String
    public var name: String
    public var parentId: String?

    public init(id: String, name: String, parentId: String? = nil) {
        (self.id, self.name, self.parentId) = (id, name, parentId)
    }

    public var json: JSONValue {
        ["id": .string(id), "name": .string(name), "parentId": parentId.map(JSONValue.string) ?? .null]
    }
}

/// One item: a product of a source, in some categories, with what prepositioning weighs.
public struct CatalogItem: Sendable, Equatable {
    public var id: String
    public var productId: String
    /// `TRACK` or `VIDEO`.
    public var type: String
    public var title: String
    public var sourceId: String
    public var categories: [String]
    public var sizeBytes: Int64
    public var durationSeconds: Double?
    public var publishedAt: String
    /// 0…100, highest prepositioned first.
    public var priority: Int
    public var expiresAt: String?

    public init(
        id: String, productId: String, type: String, title: String, sourceId: String, categories: [String],
        sizeBytes: Int64, durationSeconds: Double?, publishedAt: String, priority: Int, expiresAt: String? = nil
    ) {
        self.id = id
        self.productId = productId
        self.type = type
        self.title = title
        self.sourceId = sourceId
        self.categories = categories
        self.sizeBytes = sizeBytes
        self.durationSeconds = durationSeconds
        self.publishedAt = publishedAt
        self.priority = priority
        self.expiresAt = expiresAt
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "id": .string(id), "productId": .string(productId), "type": .string(type), "title": .string(title),
            "sourceId": .string(sourceId), "categories": .array(categories.map(JSONValue.string)),
            "sizeBytes": .number(Double(sizeBytes)), "publishedAt": .string(publishedAt), "priority": .number(Double(priority)),
        ]
        if let durationSeconds { fields["durationSeconds"] = .number(durationSeconds) }
        if let expiresAt { fields["expiresAt"] = .string(expiresAt) }
        return .object(fields)
    }
}
