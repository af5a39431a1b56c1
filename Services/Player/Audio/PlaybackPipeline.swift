import Foundation

/// The decode thread and the output thread around one `AudioPipe`, started once for the life
/// of the player. The engine drives it; what happened comes back, in order, on `events`.
final class PlaybackPipeline: Sendable {
    let pipe: AudioPipe
    let events: AsyncStream<PipelineEvent>
    /// What the output thread says of the device (status, watchdog).
    let outputHealth: OutputHealth
    private let continuation: AsyncStream<PipelineEvent>.Continuation

    /// - Parameter aheadBytes: how much decoded PCM may wait between decoder and device.
    init(output: OutputSettings, aheadBytes: Int) {
        pipe = AudioPipe(capacityBytes: aheadBytes)
        outputHealth = OutputHealth(device: output.device)
        (events, continuation) = AsyncStream.makeStream(of: PipelineEvent.self, bufferingPolicy: .unbounded)
        let continuation = continuation
        _ = DecodeThread.start(pipe: pipe) { continuation.yield($0) }
        _ = OutputThread.start(pipe: pipe, settings: output, health: outputHealth) { continuation.yield($0) }
    }

    /// Adds an event from outside the audio threads (a byte source's stall) to the same ordered stream.
    func report(_ event: PipelineEvent) {
        continuation.yield(event)
    }

    func shutdown() {
        pipe.shutdown()
        continuation.finish()
    }
}
