import Wire

extension PlayerError {
    /// Any error as (stable name, message): the player's own, the decoder's mapped to the
    /// player's names, and any other `RPCErrorConvertible` (source selection, origin) as is.
    static func describe(_ error: any Error) -> (name: String, message: String) {
        switch error {
        case let error as PlayerError: return (error.name, error.message)
        case let error as RPCErrorConvertible: return (error.rpcError.name, error.rpcError.message)
        default: return (Code.unexpected.name, "\(error)")
        }
    }

    /// Any error as the wire error a caller gets: named and numbered as its type says.
    static func rpcError(of error: any Error) -> RPCError {
        switch error {
        case let error as PlayerError: return error.rpcError
        case let error as RPCError: return error
        case let error as RPCErrorConvertible: return error.rpcError
        default: return PlayerError(.unexpected, "\(error)").rpcError
        }
    }

    /// A failure reported by name (the audio threads, a source): the player's own number when the
    /// name is one of its codes, else `SourceFailed`'s with the source's own name.
    static func rpcError(name: String, message: String) -> RPCError {
        // A stream whose TLS edge was refused mid-way: the shared code, as when it fails to start.
        if name == RPCErrorKind.tlsFailed.name {
            return RPCErrorKind.tlsFailed.error(message, details: ["transportError": .string(name)])
        }
        let own: [Code] = [.fileMissing, .corruptFile, .outputFailed, .outputUnavailable, .notPlayable, .catalogFailed, .unexpected]
        let number = own.first { $0.name == name }?.number ?? Code.sourceFailed.number
        return RPCError(code: number, name: name, message: message)
    }

    /// A failure name from the decode thread in the player's names.
    static func mapDecodeFailure(name: String, message: String) -> (String, String) {
        switch name {
        case "FileNotFound": return (Code.fileMissing.name, message)
        case "InvalidFile", "NoAudioStream", "UnsupportedCodec", "CodecOpenFailed", "DecodeFailed", "SeekFailed",
            "InvalidOutputFormat":
            return (Code.corruptFile.name, "\(name): \(message)")
        default: return (name, message)
        }
    }
}
