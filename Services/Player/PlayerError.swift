import Wire

/// The player's numbered errors, all of them in this one table: the engine's (2000–2099) and
/// source selection's (2100–2199, carried by `SourceError`); 4000+ are the origin's. `name` is
/// stable: it is the wire's `error.data.name` and the type of the error event published on
/// topic `player`.
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

        // Source selection (the TIDAL table) and byte sources: `SourceError`.

        /// Offline mode and the product is not offlined (TIDAL: an illegal playback request).
        static let illegalPlaybackRequest = Code(name: "IllegalPlaybackRequest", number: 2100)
        /// Offlined, but its validity ended (past `offlineValidUntil` or the station's expiry).
        static let offlineNotValid = Code(name: "OfflineNotValid", number: 2101)
        /// Online, not on the device, and no origin configured to stream it from.
        static let notOfflined = Code(name: "NotOfflined", number: 2102)
        /// The bytes cannot be had: an unusable playbackinfo or media answer, a missing local file.
        static let sourceUnavailable = Code(name: "SourceUnavailable", number: 2103)
        /// The download a playing file depended on failed; the error carries the downloader's own
        /// name for it when it recorded one.
        static let downloadFailed = Code(name: "DownloadFailed", number: 2104)
        /// A read or seek after (or during) the source's `close()`.
        static let sourceClosed = Code(name: "SourceClosed", number: 2105)
        /// The local file under a source (a download's `.part`, a cache file) could not be read.
        static let readFailed = Code(name: "ReadFailed", number: 2106)
        /// The origin changed the stream's bytes (another ETag) between two ranges of one playback.
        static let streamChanged = Code(name: "StreamChanged", number: 2107)

        /// Every code above, for the check against docs/protocol.md.
        static let all: [Code] = [
            nothingToPlay, fileMissing, corruptFile, outputFailed, stationNotPlayable, notPlayable, invalidConfig,
            catalogFailed, sourceFailed, mediaServerFailed, outputUnavailable, unexpected,
            illegalPlaybackRequest, offlineNotValid, notOfflined, sourceUnavailable, downloadFailed, sourceClosed,
            readFailed, streamChanged,
        ]
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
