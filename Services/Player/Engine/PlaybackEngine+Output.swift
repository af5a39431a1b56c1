import Foundation
import Wire

/// The device as the engine sees it: the output thread's reports of a device that is
/// unavailable or back, the honest answer of `station.tune` and `player.play` (sound on its way,
/// or why not), and the watchdog's question whether the player is silent without a reason.
extension PlaybackEngine {
    /// PLAYING when sound can flow, STALLED while the device is unavailable or the active
    /// product's first bytes are late: what a client hears of a wish to play.
    var soundingState: PlaybackState {
        if outputTrouble != nil { return .stalled }
        if let current = active, current.sourceWaiting, !current.sounded { return .stalled }
        return .playing
    }

    /// The error callers get while the device is unavailable.
    func outputUnavailableError(_ reason: String) -> RPCError {
        PlayerError(
            .outputUnavailable,
            "The audio device \(pipeline.outputHealth.device) cannot be used (\(reason)); "
                + "the player keeps trying to open it and plays on by itself once it opens."
        ).rpcError
    }

    /// The device could not be opened or failed: the product stays active and waits (STALLED),
    /// clients hear `OutputUnavailable` once per outage, and a caller waiting for sound hears it too.
    func outputUnavailable(_ reason: String) {
        let error = outputUnavailableError(reason)
        if outputTrouble != reason {
            logger.warning(
                "audio output unavailable; retrying",
                metadata: [
                    "device": "\(pipeline.outputHealth.device)", "error": "\(reason)",
                ])
            events.publish(.outputUnavailable(error, reason: reason, device: pipeline.outputHealth.device, product: active?.product))
        }
        outputTrouble = reason
        if let token = active?.token { sounds.settle(token, error) }
        if state == .playing { setState(.stalled) }
    }

    /// The device opened again: `OutputAvailable`; the state follows the first frame written.
    func outputRestored() {
        guard outputTrouble != nil else { return }
        outputTrouble = nil
        logger.info("audio output open again", metadata: ["device": "\(pipeline.outputHealth.device)"])
        events.publish(.outputAvailable(device: pipeline.outputHealth.device))
    }

    /// How the wish to hear the active product ended, waiting up to `limit`: nil once its first
    /// frame was queued on the device (or it was replaced, or nothing plays, or it is still on
    /// its way when the time is up and no cause is known), else the error that keeps it silent.
    func soundOutcome(within limit: Duration) async -> RPCError? {
        guard let current = active, wantPlaying else { return nil }
        if current.sounded { return outputTrouble.map(outputUnavailableError) }
        let token = current.token
        if let known = sounds.outcome(of: token) { return known }
        let outcome: RPCError? = await withCheckedContinuation { continuation in
            let waiter = sounds.add(token, continuation)
            Task {
                try? await Task.sleep(for: limit)
                self.giveUpWaitingForSound(token, waiter)
            }
        }
        if outcome != nil { return outcome }
        // Time is up with nothing known: a device that is unavailable is still the cause.
        guard active?.token == token, active?.sounded == false else { return nil }
        return outputTrouble.map(outputUnavailableError)
    }

    private func giveUpWaitingForSound(_ token: TrackToken, _ waiter: Int) {
        sounds.giveUp(token, waiter: waiter)
    }

    /// Past this while PLAYING with nothing reaching the device and no reason, the player counts
    /// as wedged (the watchdog stops pinging).
    static let silenceLimit: Duration = .seconds(5)

    /// Nil when the player is sounding or silent for a reason it reports (not playing, STALLED,
    /// the device unavailable, bytes late, a product being resolved); else why it is wedged.
    func silenceWithoutReason(now: ContinuousClock.Instant = .now) -> String? {
        guard state == .playing, outputTrouble == nil, let current = active else { return nil }
        if current.sourceStalled || !current.submitted { return nil }
        if let queued = next, queued.track == nil, queued.failure == nil { return nil }
        if station.isFetching { return nil }
        let health = pipeline.outputHealth.snapshot
        if health.state == .unavailable { return nil }
        let since = max(playingSince, health.lastFrameAt ?? playingSince)
        let silent = now - since
        guard silent > Self.silenceLimit else { return nil }
        return "PLAYING but no audio reached the device \(pipeline.outputHealth.device) for \(Self.milliseconds(silent) / 1000) s"
    }
}
