import Wire

/// Failures of the active product: one error event, then IDLE.
extension PlaybackEngine {
    /// Raises `error` for the active product, then goes IDLE (TIDAL: error just before IDLE).
    func fail(_ error: any Error) {
        fail(PlayerError.rpcError(of: error))
    }

    func fail(name: String, message: String) {
        fail(PlayerError.rpcError(name: name, message: message))
    }

    /// Raises `error` for the active product (the error event, and the answer of a caller waiting
    /// for it to start), then goes IDLE.
    func fail(_ error: RPCError) {
        let (name, message) = (error.name, error.message)
        if let token = active?.token {
            outcomes.settle(token, error)
            sounds.settle(token, error)
        }
        let product = active?.product
        logger.warning("playback failed", metadata: ["error": "\(name): \(message)", "productId": "\(product?.productId ?? "-")"])
        endActivePlay(reason: .error(name: name, message: message))
        pipe.stop()
        abandonTracks()
        events.publish(.playbackFailed(error, product: product))
        forgetQueue()
        setState(.idle)
    }
}
