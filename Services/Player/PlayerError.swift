import Wire

/// The player's own failures, codes 2000–2099 (2100–2199 belong to source selection, 4000+ are
/// the origin's). `name` is stable: it is the wire's `error.data.name` and the type of the error
/// event published on topic `player`.
struct PlayerError: Error, Sendable, Equatable, CustomStringConvertible, RPCErrorConvertible {
    struct Code: Hashable, Sendable {
        let name: String
        let number: Int

        /// A method that needs an active product was called while IDLE (e.g. `station.skip` with no station).
        static let nothingToPlay = Code(name: "NothingToPlay", number: 2001)
        /// The local file the catalog names is not on disk.
        static let fileMissing = Code(name: "FileMissing", number: 2002)
        /// The file is there but cannot be decoded (damaged, truncated, not media).
        static let corruptFile = Code(name: "CorruptFile", number: 2003)
        /// The output could not take the samples it was given (a mismatch inside the player).
        /// A device that cannot be opened or written is `OutputUnavailable`.
        static let outputFailed = Code(name: "OutputFailed", number: 2004)
        /// `station.tune` named a station the catalog does not know, or with nothing playable.
        static let stationNotPlayable = Code(name: "StationNotPlayable", number: 2005)
        /// The product is neither on the device nor reachable (no origin configured).
        static let notPlayable = Code(name: "NotPlayable", number: 2006)
        /// A `player.config.set` value outside its range.
        static let invalidConfig = Code(name: "InvalidConfig", number: 2007)
        /// Reading the catalog failed.
        static let catalogFailed = Code(name: "CatalogFailed", number: 2008)
        /// The bytes underneath failed (a download or stream); the event carries the source's own name.
        static let sourceFailed = Code(name: "SourceFailed", number: 2009)
        /// The local media server could not listen (port taken) or the player is stopping.
        static let mediaServerFailed = Code(name: "MediaServerFailed", number: 2010)
        /// The audio device cannot be opened or failed while playing (no sound card, an unknown
        /// PCM name, a device unplugged). The player keeps trying to reopen it and plays on by
        /// itself once it opens; the message carries ALSA's reason.
        static let outputUnavailable = Code(name: "OutputUnavailable", number: 2011)
        /// Anything else unexpected inside the player (TIDAL's UnexpectedError).
        static let unexpected = Code(name: "UnexpectedError", number: 2099)
    }

    var code: Code
    var message: String
    /// Why, as a stable name a client can act on (`error.data.reason`), where one error has
    /// several causes: `OfflineMode` for a station refused because offline mode is on.
    var reason: String?

    init(_ code: Code, _ message: String, reason: String? = nil) {
        self.code = code
        self.message = message
        self.reason = reason
    }

    var name: String { code.name }
    var description: String { "\(code.name): \(message)" }
    var rpcError: RPCError {
        RPCError(code: code.number, name: code.name, message: message, details: reason.map { ["reason": .string($0)] } ?? [:])
    }
}
