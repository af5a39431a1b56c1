import MediaDecoder

extension TrackInfo {
    /// Takes what the decoder saw in the file where the catalog said something else or
    /// nothing; true when a value the catalog gave was different.
    mutating func adopt(_ info: AudioFormatInfo) -> Bool {
        var changed = false
        func take<T: Equatable>(_ key: WritableKeyPath<TrackInfo, T?>, _ value: T?) {
            guard let value else { return }
            if let known = self[keyPath: key], known != value { changed = true }
            self[keyPath: key] = value
        }
        take(\.codec, info.codecName)
        take(\.sampleRate, info.sampleRate)
        take(\.bitDepth, info.bitsPerSample)
        if durationSeconds == nil { durationSeconds = info.durationSeconds }
        if bitRate == nil { bitRate = info.bitRate }
        return changed
    }
}
