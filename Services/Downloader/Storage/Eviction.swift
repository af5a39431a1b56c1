/// Makes room by rotating station content (Feed.fm): only tracks already heard, least
/// recently played first (`stationItems.playedAt`, set by the player). Content the user asked
/// for explicitly (an `offline.add` token that is not deleted) is never evicted, nor is a
/// file still unheard in any station that holds it, nor one being downloaded. Which files
/// qualify, in that order, is `FileStore.evict`'s query; this picks how many of them go.
enum Eviction {
    struct Victim: Sendable, Equatable {
        var fileId: Int64
        var path: String
        var sizeBytes: Int64
        var items: [String]
        var stations: [String]
    }

    /// The first candidates until `bytes` are freed; none when all of them would not do.
    static func choose(bytes: Int64, from candidates: [Victim]) -> [Victim] {
        // Evicting heard tracks and still not making room would lose them for nothing.
        guard candidates.reduce(0, { $0 + $1.sizeBytes }) >= bytes else { return [] }
        var freed: Int64 = 0
        var chosen: [Victim] = []
        for victim in candidates where freed < bytes {
            chosen.append(victim)
            freed += victim.sizeBytes
        }
        return chosen
    }
}
