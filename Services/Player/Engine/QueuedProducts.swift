import Foundation
import MediaDecoder

extension PlaybackEngine {
    /// The product being played: resolved, handed to the pipeline, heard, recorded.
    struct Active {
        var product: MediaProduct
        var token: TrackToken
        var stationId: String?
        /// Nil while the source is being resolved.
        var track: ResolvedTrack?
        var context: PlaybackContext?
        /// The track's job went to the pipeline.
        var submitted = false
        /// Where playback starts when it is submitted (a seek before play).
        var startPosition: Double = 0
        /// Its `MediaProductTransition` was published. Until then clients know only `previous`.
        var announced = false
        /// What clients heard of as active before this product.
        var previous: MediaProduct?
        /// Its first frame reached the device.
        var sounded = false
        /// Its source waits for bytes (a stream, a file still downloading).
        var sourceStalled = false
        /// It has waited for its first bytes past `silentStartGrace`: nothing can be heard (STALLED).
        var sourceWaiting = false
        /// When it was asked for (a load, or the end of the product before it).
        var requestedAt: ContinuousClock.Instant = .now
        /// Asked for by a load (TIDAL's explicit transition), not reached by playing on.
        var explicitStart = true
        /// Its play event and its Streaming Metrics session.
        var recording = PlayRecording()
    }

    /// The product set to play after the active one (TIDAL's `setNext`), queued in the pipeline
    /// behind it once resolved, so that the border is gapless.
    struct Next {
        var product: MediaProduct
        var token: TrackToken
        var stationId: String?
        var track: ResolvedTrack?
        /// Resolution failed: raised once this product becomes the active one.
        var failure: (name: String, message: String)?
        /// Its job is queued in the pipeline behind the active one (gapless).
        var handedOver = false
        /// What its decoder found in the file, when it opened before the transition.
        var opened: AudioFormatInfo?
    }

    /// The product clients last heard of as active: the active one once its transition was
    /// published, else the one before it (a product skipped while still being resolved was
    /// never announced, so the next transition must not name it as the previous one).
    var announcedProduct: MediaProduct? {
        guard let active else { return nil }
        return active.announced ? active.product : active.previous
    }

}
