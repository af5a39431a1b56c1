import ServiceKit

/// The player's part of the health gate (its audio output) and of its metrics (docs/protocol.md,
/// "service.metrics").
enum PlayerFleet {
    static func problems(_ probe: OutputProbe) -> @Sendable () async -> [String] {
        { await probe.problem().map { [$0] } ?? [] }
    }

    static func metrics(_ engine: PlaybackEngine) -> @Sendable () async -> [MetricFamily] {
        {
            let state = await engine.state
            return [
                .state(
                    "cassette_playback_state", help: "The player's playbackState: 1 for the one that holds.",
                    states: [PlaybackState.idle, .playing, .notPlaying, .stalled].map(\.rawValue),
                    current: state.rawValue)
            ]
        }
    }

    static func totals(_ output: OutputHealth) -> [MetricTotal] {
        [
            MetricTotal("cassette_output_underruns", help: "Underruns and suspends of the audio output recovered from.") {
                Double(output.snapshot.underruns)
            }
        ]
    }
}
