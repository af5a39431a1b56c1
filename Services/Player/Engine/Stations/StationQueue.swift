import OriginClient
import Wire

/// One item of a station as the engine plays it: an offline station's item (its own product on
/// the device), or an item of a streaming station's play queue, with what the origin said of it.
struct StationItem: Sendable, Equatable {
    var itemId: String
    var productId: String
    var display = DisplayMetadata()

    static func local(_ itemId: String) -> StationItem { StationItem(itemId: itemId, productId: itemId) }
}

/// `POST /v1/stations/{id}/play` (docs/origin.md, "Streaming stations"): the next items of a
/// streaming station. Items with an id or product id that is not a plain token are left out.
enum StationQueue {
    /// Items asked for at a time.
    static let batch = 3
    /// Heard item ids sent back at most (the newest).
    static let playedSent = 50

    static func next(
        stationId: String, played: [String], origin: OriginClient,
        retry: RetryPolicy
    ) async throws -> (name: String?, items: [StationItem]) {
        let body: JSONValue = [
            "count": .number(Double(batch)),
            "played": .array(played.suffix(playedSent).map(JSONValue.string)),
        ]
        let answer = try await origin.post("/v1/stations/\(stationId)/play", body: body, retry: retry)
        let items = (answer["items"]?.arrayValue ?? []).compactMap { item -> StationItem? in
            guard let id = item["id"]?.stringValue, OriginID.isValid(id) else { return nil }
            let productId = item["productId"]?.stringValue ?? id
            guard OriginID.isValid(productId) else { return nil }
            return StationItem(
                itemId: id, productId: productId,
                display: DisplayMetadata(
                    title: item["title"]?.stringValue, artist: item["artist"]?.stringValue,
                    album: item["album"]?.stringValue))
        }
        return (answer["station"]?["name"]?.stringValue, items)
    }
}
