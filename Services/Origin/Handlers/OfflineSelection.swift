/// Decides what a device should hold of an offline station, given what it has and what it
/// has already heard (Feed.fm's offline model: the server curates, the device follows).
///
/// - `targetMinutes == nil`: the whole station; played items stay, only foreign ids go.
/// - otherwise: unheard items the device holds are kept; unheard missing items are added in
///   station order until the target is reached; heard items are swapped out (`remove`)
///   unless they are still needed to reach the target because nothing fresh is left.
///   A device that already holds enough unheard minutes gets no new items.
struct OfflineSelection: Equatable {
    /// New items to download, in station order.
    var add: [String]
    /// Ids the device holds and should delete (heard, or no longer part of the station).
    var remove: [String]
    /// Everything the device should hold once it has applied `add` and `remove`, in station order.
    var holding: [String]

    /// `items` holds each station item and its length in seconds, in station order.
    init(station items: [(id: String, seconds: Double)], have: [String], played: [String], targetMinutes: Double?) {
        let haveSet = Set(have)
        let playedSet = Set(played)
        let stationIds = Set(items.map(\.id))
        var remove = have.filter { !stationIds.contains($0) }
        var keep = Set(have.filter { stationIds.contains($0) })
        var add: [String] = []

        if let targetMinutes {
            let target = max(0, targetMinutes) * 60
            keep = keep.subtracting(playedSet)
            var total = items.filter { keep.contains($0.id) }.reduce(0) { $0 + $1.seconds }
            // Fresh items first, then heard items the device still has, then heard ones it lacks.
            for item in items where total < target && !haveSet.contains(item.id) && !playedSet.contains(item.id) {
                add.append(item.id)
                total += item.seconds
            }
            for item in items where total < target && haveSet.contains(item.id) && playedSet.contains(item.id) {
                keep.insert(item.id)
                total += item.seconds
            }
            for item in items where total < target && !haveSet.contains(item.id) && playedSet.contains(item.id) {
                add.append(item.id)
                total += item.seconds
            }
            remove += have.filter { stationIds.contains($0) && !keep.contains($0) }
        } else {
            add = items.map(\.id).filter { !haveSet.contains($0) }
        }

        var seen = Set<String>()
        self.remove = remove.filter { seen.insert($0).inserted }
        let addSet = Set(add)
        self.add = items.map(\.id).filter { addSet.contains($0) }
        self.holding = items.map(\.id).filter { addSet.contains($0) || keep.contains($0) }
    }
}
