import GRDB

/// A product's poster and thumbnail as the downloader keeps them: `productFiles` rows of role
/// `image`, named `images/{kind}.{ext}`. `offline.status` lists them and the player shows them
/// for a product it plays from the device, both with the same paths: relative to the state
/// directory (`media/images/tr-1/poster.png`), the media folder being its `media/`.
public enum ProductImages {
    /// The kind (`poster`, `thumbnail`) an image file of `name` (`images/poster.png`) holds, and
    /// its path relative to the state directory, from `localPath` relative to the media folder.
    public static func entry(name: String, localPath: String) -> (kind: String, path: String) {
        let file = name.split(separator: "/").last ?? ""
        return (String(file.split(separator: ".").first ?? ""), "media/" + localPath)
    }

    /// Kind → path of each image of `productId` (the actual id) verified on disk; empty when
    /// none is.
    public static func onDisk(productId: String, db: Database) throws -> [String: String] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT pf.name, f.localPath FROM productFiles pf JOIN files f ON f.id = pf.fileId
                WHERE pf.productId = ? AND pf.role = 'image' AND f.state = 'verified' ORDER BY pf.position
                """, arguments: [productId])
        var images: [String: String] = [:]
        for row in rows {
            let image = entry(name: row["name"], localPath: row["localPath"])
            images[image.kind] = image.path
        }
        return images
    }
}
