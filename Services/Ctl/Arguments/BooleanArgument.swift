import ArgumentParser

/// A yes/no value on the command line: `yes`/`no`, `true`/`false`, `on`/`off`, `1`/`0`, in
/// any case — wherever a setting takes a boolean (policy, network, player config).
struct BooleanArgument: ExpressibleByArgument, Equatable {
    let value: Bool

    init(_ value: Bool) { self.value = value }

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        self.value = value
    }

    static func parse(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: return nil
        }
    }

    static var allValueStrings: [String] { ["yes", "no", "true", "false", "on", "off"] }
    static var defaultCompletionKind: CompletionKind { .list(["yes", "no", "true", "false", "on", "off"]) }
}

/// A size on the command line (`500M`, `2G`, `1.5GiB`, `1048576`; see `ByteSize`), or `none`
/// where "no bound" is allowed.
struct SizeArgument: ExpressibleByArgument, Equatable {
    /// nil for `none`.
    let bytes: Int64?

    init?(argument: String) {
        if ["none", "unlimited"].contains(argument.lowercased()) {
            bytes = nil
        } else if let parsed = ByteSize.parse(argument) {
            bytes = parsed
        } else {
            return nil
        }
    }
}
