import Foundation
import MediaDecoder

/// A product's source resolved (`TrackSource`), then handed to the pipeline: the active one
/// decoded and buffered ahead, the next one queued behind it so that the border is gapless.
extension PlaybackEngine {
    /// Resolves the active product (`token`): once its source is open it is announced and
    /// handed to the pipeline; a failure fails it.
    func resolveActive(token: TrackToken, previous: MediaProduct?) async {
        guard let product = active?.product else { return }
        do {
            let track = try await resolve(product, token)
            guard var current = active, current.token == token else { return track.close() }
            current.track = track
            current.context = PlaybackContext(track: track.info, product: product, startAssetPosition: current.startPosition)
            active = current
            startSession()
            if track.info.offline { watchValidity(token, productId: product.productId) }
            publishTransition(previous: previous, active: current)
            if wantPlaying && state == .notPlaying { setState(soundingState) }
            stationItemStarted(current)
            submitActive()
        } catch {
            guard active?.token == token else { return }
            fail(error)
        }
    }

    /// Resolves the next product (`token`), queued behind the active one once its source is
    /// open; a failure is raised when it would become the active one.
    func resolveNext(token: TrackToken) async {
        guard let product = next?.product else { return }
        do {
            let track = try await resolve(product, token)
            guard active?.token == token || next?.token == token else { return track.close() }
            if track.info.offline { watchValidity(token, productId: product.productId) }
            if var current = active, current.token == token, current.track == nil {
                // It became the active product while being resolved: start it now.
                current.track = track
                current.context = PlaybackContext(track: track.info, product: product, startAssetPosition: 0)
                active = current
                startSession()
                noteFormat(current.context)
                syncPrivilege()
                submitActive()
                return
            }
            guard next?.token == token else { return }
            next?.track = track
            handOverNext()
        } catch {
            if active?.token == token {
                fail(error)
            } else if next?.token == token {
                next?.failure = PlayerError.describe(error)
                // Let the active track end; the failure is raised when this one becomes active.
                if let current = active, current.submitted { _ = pipe.setNext(nil, after: current.token) }
            }
        }
    }

    /// `product`'s source as the config in force asks for it (offline mode, the streaming
    /// quality of the network), a station item's title, artist and album filled from the
    /// station's list where its source named none.
    private func resolve(_ product: MediaProduct, _ token: TrackToken) async throws -> ResolvedTrack {
        let config = await currentConfig()
        var track = try await source.resolve(
            productId: product.productId, offlineMode: config.offlineMode,
            quality: await streamingQuality(config), events: sourceEvents(token))
        if let listed = station.display(for: product.productId) {
            track.info.display = track.info.display.filled(from: listed)
        }
        return track
    }

    /// Sends the active track to the pipeline, paused unless the app wants sound, so that it
    /// is decoded and buffered ahead and `play` starts at once.
    func submitActive() {
        guard var current = active, let track = current.track, !current.submitted else { return }
        current.submitted = true
        active = current
        pipe.setPaused(!wantPlaying)
        var jobs = [track.job(current.token, at: current.startPosition)]
        // Whose end must wait for a track still being resolved. Given to the pipe together with
        // the jobs: set a moment later, the decoder and the device could already be past it.
        var expecting: TrackToken?
        if var queued = next, queued.failure == nil {
            if let nextTrack = queued.track {
                jobs.append(nextTrack.job(queued.token))
                queued.handedOver = true
                next = queued
                if stationHasItem(after: queued.token) { expecting = queued.token }
            } else {
                expecting = current.token
            }
        } else if next == nil, station.cursor?.streaming == true, station.isFetching {
            // A streaming station whose next items are still being asked for: the end waits for
            // them (STALLED if it comes first) rather than ending the station.
            expecting = current.token
        }
        pipe.replace(jobs: jobs, expecting: expecting)
    }

    /// Queues the resolved next product behind the active one in the pipeline (gapless).
    func handOverNext() {
        guard let current = active, current.submitted, var queued = next, let track = queued.track, !queued.handedOver else { return }
        if pipe.setNext(track.job(queued.token), after: current.token, expectingAfterIt: stationHasItem(after: queued.token)) {
            queued.handedOver = true
            next = queued
        }
    }

    /// Where a source's stall and failure reports go: the pipeline's ordered event stream.
    func sourceEvents(_ token: TrackToken) -> @Sendable (ByteSourceEvent) -> Void {
        let pipeline = pipeline
        return { pipeline.report(.source(token, $0)) }
    }

    /// Releases the bytes of the active and next tracks (after the pipeline was stopped), so a
    /// decoder waiting on a stalled source gives up at once.
    func abandonTracks() {
        active?.track?.close()
        next?.track?.close()
    }
}
