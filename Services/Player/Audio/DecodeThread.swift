import BlockingIO
import Foundation
import MediaDecoder
import Wire

/// The decode thread: opens each track's decoder, decodes ahead into the pipe until it is
/// full, and obeys seeks and aborts between chunks. FFmpeg objects never leave this thread.
enum DecodeThread {
    static func start(pipe: AudioPipe, emit: @escaping @Sendable (PipelineEvent) -> Void) -> Thread {
        NamedThread.start("cassette-decode") { run(pipe, emit) }
    }

    private static func run(_ pipe: AudioPipe, _ emit: @Sendable (PipelineEvent) -> Void) {
        while let (job, startEpoch) = pipe.nextJob() {
            decode(job, startEpoch: startEpoch, pipe: pipe, emit: emit)
            pipe.decodingEnded()
        }
    }

    private static func decode(_ job: TrackJob, startEpoch: UInt64, pipe: AudioPipe, emit: @Sendable (PipelineEvent) -> Void) {
        var epoch = startEpoch
        let token = job.token
        let decoder: AudioDecoder
        do {
            decoder = try job.open()
            emit(.opened(token, decoder.info))
            if job.startPosition > 0 { try decoder.seek(to: job.startPosition) }
        } catch {
            let (name, message) = describe(error)
            // Told at once as well, not only once the output reaches it: a product that cannot
            // even be opened fails before any sound, and whoever loaded it is waiting to hear so.
            emit(.failed(token, name: name, message: message))
            pipe.push(.failed(token, name: name, message: message), epoch: epoch)
            return
        }
        let loudness = job.loudness
        guard pipe.push(.start(token, decoder.outputFormat, position: job.startPosition, loudness: loudness), epoch: epoch) else {
            guard case .seek(let position, let newEpoch) = pipe.control(for: token) else { return }
            return restart(decoder, token: token, loudness: loudness, at: position, epoch: newEpoch, pipe: pipe)
        }
        loop(decoder, token: token, loudness: loudness, epoch: &epoch, pipe: pipe)
    }

    private static func restart(
        _ decoder: AudioDecoder, token: TrackToken, loudness: LoudnessTags, at position: Double,
        epoch: UInt64, pipe: AudioPipe
    ) {
        var epoch = epoch
        do {
            try decoder.seek(to: position)
        } catch {
            let (name, message) = describe(error)
            pipe.push(.failed(token, name: name, message: message), epoch: epoch)
            return
        }
        if pipe.push(.start(token, decoder.outputFormat, position: position, loudness: loudness), epoch: epoch) {
            loop(decoder, token: token, loudness: loudness, epoch: &epoch, pipe: pipe)
        } else if case .seek(let again, let newEpoch) = pipe.control(for: token) {
            restart(decoder, token: token, loudness: loudness, at: again, epoch: newEpoch, pipe: pipe)
        }
    }

    private static func loop(
        _ decoder: AudioDecoder, token: TrackToken, loudness: LoudnessTags, epoch: inout UInt64,
        pipe: AudioPipe
    ) {
        while true {
            switch pipe.control(for: token) {
            case .abort:
                return
            case .seek(let position, let newEpoch):
                return restart(decoder, token: token, loudness: loudness, at: position, epoch: newEpoch, pipe: pipe)
            case .proceed:
                break
            }
            let item: PipeItem
            var last = false
            do {
                if let chunk = try decoder.nextChunk() {
                    item = .audio(token, chunk)
                } else {
                    item = .end(token, more: false)
                    last = true
                }
            } catch {
                let (name, message) = describe(error)
                item = .failed(token, name: name, message: message)
                last = true
            }
            // A refused push means a flush came: the next `control` says what it wanted.
            if pipe.push(item, epoch: epoch) && last { return }
        }
    }

    /// Decoder errors keep FFmpeg's name; the engine maps them to the player's error names. A
    /// source's failure (an origin refusal, a damaged HLS segment) keeps the source's name.
    static func describe(_ error: any Error) -> (String, String) {
        if let error = error as? DecoderError { return (error.name, error.message) }
        if let error = error as? PlayerError { return (error.name, error.message) }
        if let error = error as? any RPCErrorConvertible { return (error.rpcError.name, error.rpcError.message) }
        return ("UnexpectedError", "\(error)")
    }
}
