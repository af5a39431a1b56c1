import ArgumentParser
import Wire

/// `cassettectl policy get|set`: the downloader's download policy.
struct Policy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or change the download policy (policy.get, policy.set).",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the download policy.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .downloader, "policy.get", json: output.json)
            CtlOutput.show(result, json: output.json, render: Policy.render)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the download policy; only the keys given change.",
            discussion: """
                Booleans: yes/no, true/false, on/off. Sizes: bytes, or with a decimal unit (500M, 2G, \
                1.5T: powers of 1000) or a binary one (512MiB, 1.5GiB: powers of 1024); --max-cache-bytes \
                none removes the bound. Example: cassettectl policy set --max-parallel 2 --allow-cellular no \
                --max-cache-bytes 4G

                Download windows are in the device's local time; outside every one nothing downloads but \
                what `offline add --now` asked for, and a window whose end is not after its start runs into \
                the next day. The windows given replace the policy's: cassettectl policy set \
                --download-window 'mon-fri 22:00-06:00' --download-window 'sat,sun 00:00-24:00 5M' --max-rate 1M
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Files downloaded at once (1…32).") var maxParallel: Int?
        @Option(help: ArgumentHelp("Download over cellular networks: yes or no.", valueName: "yes|no")) var allowCellular: BooleanArgument?
        @Option(help: ArgumentHelp("Download over metered networks: yes or no.", valueName: "yes|no")) var allowMetered: BooleanArgument?
        @Option(help: ArgumentHelp("Most the offline content may use, e.g. 4G, 1.5GiB, or none.", valueName: "size|none"))
        var maxCacheBytes: SizeArgument?
        @Option(help: ArgumentHelp("Room to leave free on the disk, e.g. 500M.", valueName: "size")) var minFreeBytes: SizeArgument?
        @Option(name: .customLong("download-window"), help: WindowArgument.help) var downloadWindows: [WindowArgument] = []
        @Option(
            help: ArgumentHelp(
                "All downloads together receive at most this many bytes per second (outside a window's own limit), e.g. 2M, or none.",
                valueName: "rate|none"))
        var maxRate: RateArgument?
        @Option(
            name: .customLong("set"),
            help: ArgumentHelp("Any other key, as key=JSON (e.g. --set offlineAudioQuality=LOSSLESS); yes/no/on/off are booleans.", valueName: "key=value"))
        var extra: [String] = []

        func validate() throws {
            if let minFreeBytes, minFreeBytes.bytes == nil { throw ValidationError("--min-free-bytes takes a size, e.g. 500M.") }
            if downloadWindows.count > 1, downloadWindows.contains(where: { $0.window == nil }) {
                throw ValidationError("--download-window none stands alone: it removes every window.")
            }
        }

        func run() async throws {
            var params: [String: JSONValue] = [:]
            if let maxParallel { params["maxParallel"] = .number(Double(maxParallel)) }
            if let allowCellular { params["allowCellular"] = .bool(allowCellular.value) }
            if let allowMetered { params["allowMetered"] = .bool(allowMetered.value) }
            if let maxCacheBytes { params["maxCacheBytes"] = maxCacheBytes.bytes.map { .number(Double($0)) } ?? .null }
            if let bytes = minFreeBytes?.bytes { params["minFreeBytes"] = .number(Double(bytes)) }
            if !downloadWindows.isEmpty { params["downloadWindows"] = .array(downloadWindows.compactMap(\.window)) }
            if let maxRate { params["maxBytesPerSecond"] = maxRate.bytesPerSecond.map { .number(Double($0)) } ?? .null }
            for pair in extra {
                let (key, value) = try KeyValueArgument.parse(pair)
                params[key] = value
            }
            guard !params.isEmpty else { throw ValidationError("Give at least one setting to change, e.g. --max-parallel 2.") }
            let result = try await CtlClient.call(connection, .downloader, "policy.set", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json, render: Policy.render)
            // A downloader that predates a key ignores it; say so rather than let it look applied.
            let ignored = params.keys.filter { result[$0] == nil }.sorted()
            if !ignored.isEmpty {
                CtlOutput.error("the downloader did not apply \(ignored.joined(separator: ", ")) (not in its answer: it does not know the key yet).")
            }
        }
    }
}

/// `key=value` arguments: yes/no/on/off are booleans, else the value is JSON when it parses
/// as JSON, else a string.
enum KeyValueArgument {
    static func parse(_ text: String) throws -> (String, JSONValue) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw ValidationError("'\(text)' is not key=value.")
        }
        let key = String(text[..<eq]), raw = String(text[text.index(after: eq)...])
        if let flag = BooleanArgument.parse(raw), Double(raw) == nil { return (key, .bool(flag)) }
        let value = (try? JSONCoding.parse(Array(raw.utf8))) ?? .string(raw)
        return (key, value)
    }
}

extension Policy {
    /// `policy.get`/`policy.set`'s answer as keys and values, the windows and rates in words.
    static func render(_ value: JSONValue) -> String {
        guard case .object(var fields) = value else { return KeyValues.render(value) }
        if let windows = fields["downloadWindows"]?.arrayValue {
            fields["downloadWindows"] = .string(windows.isEmpty ? "none (downloads at any time)" : windows.map(describe).joined(separator: "; "))
        }
        if let rate = fields["maxBytesPerSecond"] { fields["maxBytesPerSecond"] = .string(Self.rate(rate) ?? "none") }
        if let state = fields["downloadWindow"] { fields["downloadWindow"] = .string(Self.state(state)) }
        return KeyValues.render(.object(fields))
    }

    /// `mon,tue,wed 22:00-06:00 at most 2 MB/s`.
    static func describe(_ window: JSONValue) -> String {
        let days = window["days"]?.arrayValue?.compactMap(\.stringValue).joined(separator: ",") ?? "?"
        var text = "\(days) \(Format.text(window["from"]))-\(Format.text(window["to"]))"
        if let rate = window["maxBytesPerSecond"].flatMap(Self.rate) { text += " at most \(rate)" }
        return text
    }

    /// `open until …`, `closed until …`: the windows' verdict now.
    static func state(_ state: JSONValue) -> String {
        var text: String
        if state["open"]?.boolValue == true {
            text = state["closesAt"]?.stringValue.map { "open until \(HumanTime.date($0))" } ?? "open"
        } else {
            text = state["opensAt"]?.stringValue.map { "closed until \(HumanTime.date($0))" } ?? "closed"
        }
        if let rate = state["limit"].flatMap(Self.rate) { text += ", at most \(rate)" }
        return text
    }

    private static func rate(_ value: JSONValue) -> String? {
        value.doubleValue.map { ByteSize.format($0) + "/s" }
    }
}
