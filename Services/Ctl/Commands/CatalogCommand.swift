import ArgumentParser
import Wire

/// `cassettectl catalog …`: the content catalog the downloader mirrors (catalog.* methods).
struct CatalogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Browse the content catalog and choose what the device prepositions (catalog.*).",
        discussion: """
            Subscribe to a source and select a category, and the downloader downloads that \
            category's items by itself, highest priority first, within catalog.maxAutoBytes and \
            the download policy. Sort descriptors: --sort KEY or --sort KEY:desc (KEY:asc is the \
            default), repeatable, applied in order. Example: cassettectl catalog items --filter \
            withCategory --category cat-focus --sort priority:desc
            """,
        subcommands: [Sources.self, Categories.self, Items.self, Subscribe.self, Select.self, Save.self, Refresh.self])

    /// `--sort title` or `--sort title:desc` → `[{"key":"title","ascending":false}]`; the
    /// downloader names a key it does not know.
    static func sortParam(_ keys: [String]) throws -> JSONValue? {
        guard !keys.isEmpty else { return nil }
        return .array(
            try keys.map { text in
                let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard let key = parts.first, !key.isEmpty else { throw ValidationError("--sort takes KEY or KEY:asc or KEY:desc.") }
                switch parts.count == 2 ? parts[1].lowercased() : "asc" {
                case "asc": return ["key": .string(key), "ascending": true]
                case "desc": return ["key": .string(key), "ascending": false]
                default: throw ValidationError("--sort \(text): the order after ':' is asc or desc.")
                }
            })
    }

    static func yesNo(_ value: JSONValue?) -> String { value?.boolValue == true ? "yes" : "no" }

    struct Sources: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the sources and whether the device subscribes to them.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: ArgumentHelp("Order by name or id; KEY:desc sorts descending.", valueName: "key")) var sort: [String] = []

        func run() async throws {
            var params: [String: JSONValue] = [:]
            params["sort"] = try CatalogCommand.sortParam(sort)
            let result = try await CtlClient.call(connection, .downloader, "catalog.sources", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json) { result in
                let rows = result["sources"]?.arrayValue ?? []
                var table = Table(headers: ["ID", "NAME", "SUBSCRIBED"])
                for s in rows { table.add([Format.text(s["id"]), Format.text(s["name"]), CatalogCommand.yesNo(s["subscribed"])]) }
                return rows.isEmpty ? "no sources (catalog refresh fetches them)" : table.render()
            }
        }
    }

    struct Categories: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List categories: all, selected, selectedWithContent or subcategories:ID.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "all, selected, selectedWithContent or subcategories:ID.") var filter: String?
        @Option(help: ArgumentHelp("Order by name, id or itemCount; KEY:desc sorts descending.", valueName: "key")) var sort: [String] = []

        func run() async throws {
            var params: [String: JSONValue] = [:]
            if let filter { params["filter"] = .string(filter) }
            params["sort"] = try CatalogCommand.sortParam(sort)
            let result = try await CtlClient.call(connection, .downloader, "catalog.categories", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json) { result in
                let rows = result["categories"]?.arrayValue ?? []
                var table = Table(headers: ["ID", "NAME", "PARENT", "SELECTED", "ITEMS"])
                for c in rows {
                    table.add([
                        Format.text(c["id"]), Format.text(c["name"]), c["parentId"]?.stringValue ?? "-",
                        CatalogCommand.yesNo(c["selected"]), Format.text(c["itemCount"]),
                    ])
                }
                return rows.isEmpty ? "no categories" : table.render()
            }
        }
    }

    struct Items: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List items: all, downloading, withCategory, downloadedWithCategory, saved, downloadedNotViewed, and the videos… variants.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "The filter (default all).") var filter: String?
        @Option(name: .customLong("category"), help: "The category of a …WithCategory filter.") var categoryId: String?
        @Option(help: ArgumentHelp("Order by title, publishedAt, sizeBytes or priority; KEY:desc sorts descending.", valueName: "key"))
        var sort: [String] = []

        func run() async throws {
            var params: [String: JSONValue] = [:]
            if let filter { params["filter"] = .string(filter) }
            if let categoryId { params["categoryId"] = .string(categoryId) }
            params["sort"] = try CatalogCommand.sortParam(sort)
            let result = try await CtlClient.call(connection, .downloader, "catalog.items", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json) { result in
                let rows = result["items"]?.arrayValue ?? []
                var table = Table(headers: ["ID", "TYPE", "TITLE", "SOURCE", "PRIORITY", "SIZE", "STATE", "SAVED", "VIEWED"])
                for i in rows {
                    table.add([
                        Format.text(i["id"]), Format.text(i["type"]), Format.text(i["title"]), Format.text(i["sourceId"]),
                        Format.text(i["priority"]), Format.bytes(i["sizeBytes"]?.doubleValue), Format.text(i["state"]),
                        CatalogCommand.yesNo(i["saved"]), CatalogCommand.yesNo(i["viewed"]),
                    ])
                }
                return rows.isEmpty ? "no items" : table.render()
            }
        }
    }

    struct Subscribe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Subscribe to a source (or --off to stop).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The source id.") var sourceId: String
        @Flag(help: "Unsubscribe instead.") var off = false

        func run() async throws {
            let result = try await CtlClient.call(
                connection, .downloader, "catalog.subscribe",
                ["sourceId": .string(sourceId), "subscribed": .bool(!off)], json: output.json)
            CtlOutput.show(result, json: output.json) { _ in off ? "unsubscribed from \(sourceId)" : "subscribed to \(sourceId)" }
        }
    }

    struct Select: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Select a category (or --off to deselect).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The category id.") var categoryId: String
        @Flag(help: "Deselect instead.") var off = false

        func run() async throws {
            let result = try await CtlClient.call(
                connection, .downloader, "catalog.select",
                ["categoryId": .string(categoryId), "selected": .bool(!off)], json: output.json)
            CtlOutput.show(result, json: output.json) { _ in off ? "deselected \(categoryId)" : "selected \(categoryId)" }
        }
    }

    struct Save: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Save an item, so its content stays (or --off to unsave).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The item id.") var itemId: String
        @Flag(help: "Unsave instead.") var off = false

        func run() async throws {
            let result = try await CtlClient.call(
                connection, .downloader, "catalog.save",
                ["itemId": .string(itemId), "saved": .bool(!off)], json: output.json)
            CtlOutput.show(result, json: output.json) { _ in off ? "unsaved \(itemId)" : "saved \(itemId)" }
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Fetch what changed in the origin's catalog now.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .downloader, "catalog.refresh", json: output.json)
            CtlOutput.show(result, json: output.json) { r in
                "\(r["added"]?.arrayValue?.count ?? 0) added, \(r["changed"]?.arrayValue?.count ?? 0) changed, \(r["removed"]?.arrayValue?.count ?? 0) removed"
            }
        }
    }
}
