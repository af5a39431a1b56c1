import Wire

/// Where a station being played stands: its items and which one is active.
struct StationCursor: Sendable {
    var id: String
    var name: String
    /// An offline station's items with a verified file, in station order; a streaming
    /// station's items as its play queue gave them so far.
    var items: [StationItem]
    /// Index in `items` of the active product.
    var index: Int
    /// Items come from the origin's play queue and are streamed.
    var streaming: Bool

    /// An offline station as the device holds it, from its first item.
    static func onDevice(_ id: String, name: String, items: [String]) -> StationCursor {
        StationCursor(id: id, name: name, items: items.map(StationItem.local), index: 0, streaming: false)
    }
}

/// The station the engine plays (Feed.fm's active station): its cursor, and a streaming
/// station's request for more items while one is out. The engine plays its items as products
/// (`PlaybackEngine+Stations`); this holds where the station stands and what it needs next.
struct StationPlayer {
    /// The station playing; nil when none is.
    private(set) var cursor: StationCursor?
    /// A streaming station's request for more items, while one is out.
    private var fetch: Task<Void, Never>?

    var isPlaying: Bool { cursor != nil }
    /// A streaming station's next items are being asked for.
    var isFetching: Bool { fetch != nil }

    /// Plays `cursor` from its first item; a request still out for another station is dropped.
    mutating func start(_ cursor: StationCursor) {
        self.cursor = cursor
        cancelFetch()
    }

    /// The station is no longer played (a request still out finds it gone when it answers).
    mutating func leave() {
        cursor = nil
    }

    /// The station is no longer played, and its request for more items is dropped.
    mutating func stop() {
        cursor = nil
        cancelFetch()
    }

    private mutating func cancelFetch() {
        fetch?.cancel()
        fetch = nil
    }

    /// The item after the active one, which becomes the active one; nil when there is none.
    mutating func advance() -> StationItem? {
        guard let following else { return nil }
        cursor?.index += 1
        return following
    }

    /// The next item became the active one by playing on (an implicit transition).
    mutating func movedOn() {
        cursor?.index += 1
    }

    /// The item after the active one.
    var following: StationItem? {
        guard let cursor, cursor.index + 1 < cursor.items.count else { return nil }
        return cursor.items[cursor.index + 1]
    }

    /// Whether an item follows the one after the active one (for a streaming station: is asked
    /// for before the queue runs out, released if it cannot be).
    var hasItemAfterFollowing: Bool {
        guard let cursor else { return false }
        return cursor.streaming || cursor.index + 2 < cursor.items.count
    }

    /// A streaming station with no request out and fewer than a batch of items left after the
    /// active one: its id and the items heard so far, to ask its play queue for more.
    var wantsMore: (stationId: String, played: [String])? {
        guard let cursor, cursor.streaming, fetch == nil, cursor.items.count - cursor.index - 1 < StationQueue.batch else { return nil }
        return (cursor.id, cursor.items[...cursor.index].map(\.itemId))
    }

    mutating func fetching(_ request: Task<Void, Never>) {
        fetch = request
    }

    /// The request for more items answered; false when the station it was asked for no longer plays.
    mutating func fetchEnded(_ stationId: String) -> Bool {
        fetch = nil
        guard let cursor, cursor.id == stationId, cursor.streaming else { return false }
        return true
    }

    mutating func append(_ items: [StationItem]) {
        cursor?.items += items
    }

    /// What the station's item list says of `productId`, to fill what its source did not.
    func display(for productId: String) -> DisplayMetadata? {
        cursor?.items.first { $0.productId == productId }?.display
    }

    /// `player.status` → `activeStation`.
    var json: JSONValue {
        guard let cursor else { return .null }
        return [
            "id": .string(cursor.id), "name": .string(cursor.name), "streaming": .bool(cursor.streaming),
            "itemCount": .number(Double(cursor.items.count)), "index": .number(Double(cursor.index)),
        ]
    }
}
