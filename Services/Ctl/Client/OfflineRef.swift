import Foundation
import Wire

/// An offline named on the command line: its token (what `offline add` prints), or a product
/// id — requested or actual — when exactly one offline on the device has it.
enum OfflineRef {
    /// Tokens are UUIDs; product ids never look like one in practice, so a UUID is taken as a
    /// token without asking.
    static func looksLikeToken(_ text: String) -> Bool {
        UUID(uuidString: text) != nil
    }

    /// The offlines of `items` (`offline.list` entries) that `argument` names: the one with that
    /// token, else those whose product (actual or requested) it is.
    static func matches(_ argument: String, in items: [JSONValue]) -> [JSONValue] {
        if let exact = items.first(where: { $0["token"]?.stringValue == argument }) { return [exact] }
        return items.filter { $0["productId"]?.stringValue == argument || $0["requestedProductId"]?.stringValue == argument }
    }

    /// The failure for an argument that names no offline, or several.
    static func failure(_ argument: String, _ found: [JSONValue]) -> CtlFailure? {
        switch found.count {
        case 1:
            return nil
        case 0:
            return CtlFailure(
                name: "UnknownOffline", message: "no offline on the device is \(argument) (neither a token nor a product offlined)",
                exit: ExitStatus.serviceError, service: .downloader,
                hint: "`cassettectl offline list` shows the offlines with their tokens and products.")
        default:
            let candidates = found.map { item in
                var product = Format.text(item["productId"])
                if let requested = item["requestedProductId"]?.stringValue, requested != item["productId"]?.stringValue {
                    product = "\(requested)→\(product)"
                }
                return "\(Format.text(item["token"])) (\(product), \(Format.text(item["state"])))"
            }
            return CtlFailure(
                name: "AmbiguousOffline", message: "\(argument) names \(found.count) offlines: \(candidates.joined(separator: "; ")); give one of the tokens",
                exit: ExitStatus.usage, service: .downloader)
        }
    }

    /// The token `argument` stands for; a failure is printed and thrown as the exit.
    static func token(_ argument: String, on connection: Connection) async throws -> String {
        if looksLikeToken(argument) { return argument }
        let items = try await connection.call("offline.list")["items"]?.arrayValue ?? []
        let found = matches(argument, in: items)
        if let failure = failure(argument, found) { throw failure.report(json: connection.json) }
        return found[0]["token"]?.stringValue ?? argument
    }
}
