import Foundation

/// The parts of a response's `Cache-Control` (RFC 9111 §5.2.2) a private client cache acts on.
struct CacheControl: Sendable, Equatable {
    /// `no-store`: never keep the body.
    var noStore = false
    /// `no-cache`: keep it, but revalidate before every use.
    var noCache = false
    /// `max-age` in seconds: fresh for this long after it was received.
    var maxAge: Int?

    init(noStore: Bool = false, noCache: Bool = false, maxAge: Int? = nil) {
        self.noStore = noStore
        self.noCache = noCache
        self.maxAge = maxAge
    }

    /// Parses the header's value; unknown directives are ignored, a malformed `max-age` counts as 0
    /// (stale), as the RFC asks.
    init(header: String?) {
        guard let header else { return }
        for part in header.split(separator: ",") {
            let directive = part.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            guard let name = directive.first?.lowercased() else { continue }
            switch name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "max-age": maxAge = directive.count > 1 ? max(0, Int(directive[1]) ?? 0) : 0
            default: continue
            }
        }
    }
}
