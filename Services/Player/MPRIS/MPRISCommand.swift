/// A control an MPRIS client sent, in the order the bus delivered it.
enum MPRISCommand: Sendable, Equatable {
    case play, pause, playPause, next, stop
}

extension PlaybackEngine {
    /// Carries out an MPRIS control as the matching socket method would: Play `player.play`,
    /// Pause `player.pause`, PlayPause whichever of the two the state calls for, Next
    /// `station.skip` on a station (else `player.skipToNext`), Stop `player.reset`. A control
    /// with nothing to act on does nothing, as MPRIS asks.
    func apply(_ command: MPRISCommand) async {
        switch command {
        case .play: play()
        case .pause: pause()
        case .playPause:
            if state == .playing || state == .stalled { pause() } else { play() }
        case .next:
            if station.isPlaying {
                try? stationSkip()
            } else {
                skipToNext()
            }
        case .stop: reset()
        }
    }
}
