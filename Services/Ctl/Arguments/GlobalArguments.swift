/// The options every command takes — `--runtime-dir D`, `--timeout S`, `--json` — may come
/// before the subcommand, as with nmcli or systemctl (`cassettectl --json --timeout 5 status`).
/// argument-parser only knows them on the subcommands, so they are moved behind it before
/// parsing; given after the subcommand too, the later one wins.
enum GlobalArguments {
    static let flags: Set<String> = ["--json"]
    static let options: Set<String> = ["--runtime-dir", "--timeout"]

    static func hoist(_ arguments: [String]) -> [String] {
        var leading: [[String]] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if flags.contains(argument) {
                leading.append([argument])
                index += 1
            } else if options.contains(name), argument.contains("=") {
                leading.append([argument])
                index += 1
            } else if options.contains(argument), index + 1 < arguments.count {
                leading.append([argument, arguments[index + 1]])
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        // A terminator ends the options: the moved ones go before it.
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        let given = Set(rest[..<end].map { String($0.split(separator: "=", maxSplits: 1).first ?? "") })
        let moved = leading.filter { !given.contains(String($0[0].split(separator: "=", maxSplits: 1).first ?? "")) }
        rest.insert(contentsOf: moved.flatMap { $0 }, at: end)
        return rest
    }
}
