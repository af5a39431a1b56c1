import Wire

/// What the files of unknown size of one product are expected to hold together (`bytes`) and
/// how many they are (`files`), as `offline.add` keeps it in `offlineProducts.options`
/// (`estimate`): `offline.status` counts `bytes × unknown / files` for the `unknown` files
/// whose size no `GET` told yet, the storage admission `bytes / files` for each of them, and
/// `offline.estimate` the same, so the three agree.
struct UnknownSizes: Sendable, Equatable {
    var bytes: Int64
    var files: Int

    /// The planned files of unknown size.
    init(_ planned: [PlannedFile]) {
        let unknown = planned.filter { $0.sizeBytes == nil }
        bytes = unknown.reduce(0) { $0 + ($1.estimatedBytes ?? PlannedFile.guessedBytes) }
        files = unknown.count
    }

    init(bytes: Int64, files: Int) {
        self.bytes = bytes
        self.files = files
    }

    /// What `unknown` of the files still count for.
    func bytes(unknown: Int) -> Int64 {
        guard files > 0 else { return Int64(unknown) * PlannedFile.guessedBytes }
        return bytes * Int64(unknown) / Int64(files)
    }

    /// `options.estimate`.
    var json: JSONValue { ["bytes": .number(Double(bytes)), "files": .number(Double(files))] }

    init?(options: JSONValue?) {
        guard let estimate = options?["estimate"], let bytes = estimate["bytes"]?.doubleValue,
            let files = estimate["files"]?.intValue, files > 0, bytes >= 0
        else { return nil }
        self.init(bytes: Int64(bytes), files: files)
    }
}
