import CFFmpeg

extension AudioDecoder {
    /// The next chunk of decoded, converted audio; nil at the end of the stream (and after it,
    /// until a seek). One chunk is usually one codec frame (about 1k–4k frames).
    /// Damaged packets are skipped; throws `DecodeFailed` after
    /// `maxConsecutiveDecodeErrors` of them in a row or when reading fails.
    public func nextChunk() throws(DecoderError) -> AudioChunk? {
        let codec = contexts.codec!, frame = contexts.frame!
        while true {
            if state == .finished { return nil }
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                consecutiveErrors = 0
                defer { av_frame_unref(frame) }
                if let chunk = try convert(frame) { return chunk }
            } else if received == cassette_averror_eagain() {
                try feedPacket()
            } else if received == cassette_averror_eof() {
                state = .finished
                return try makeChunk(resampler.convert(nil), startingAt: nextPresentationTime)
            } else {
                try countError(received, "avcodec_receive_frame")
            }
        }
    }

    /// Moves to `seconds` from the start of the stream. The next chunk starts exactly there
    /// (frames before it are decoded and dropped). Seeking past the end gives an empty stream.
    /// Throws `SeekFailed`.
    public func seek(to seconds: Double) throws(DecoderError) {
        let target = max(0, seconds)
        if let duration = info.durationSeconds, target >= duration {
            // Containers disagree on seeking past the end (error, or the last keyframe): be consistent.
            avcodec_flush_buffers(contexts.codec)
            state = .finished
            discardUntil = nil
            nextPresentationTime = duration
            return
        }
        let timestamp = startTimestamp + Int64(((target + timeOffset) / timeBase).rounded(.down))
        let err = av_seek_frame(contexts.format, streamIndex, timestamp, AVSEEK_FLAG_BACKWARD)
        guard err >= 0 else {
            throw contexts.io?.sourceFailure ?? DecoderError(.seekFailed, "av_seek_frame(\(target) s)", ffmpeg: err)
        }
        avcodec_flush_buffers(contexts.codec)
        if pendingPacket {
            av_packet_unref(contexts.packet)
            pendingPacket = false
        }
        // Drop what the resampler holds from before the seek.
        resampler = try Resampler(
            input: resampler.input, layout: contexts.codec!.pointee.ch_layout,
            output: outputFormat)
        state = .decoding
        consecutiveErrors = 0
        nextPresentationTime = target
        discardUntil = target
    }

    /// Reads the next packet of our stream and sends it to the decoder; at end of file sends
    /// the flush packet instead.
    private func feedPacket() throws(DecoderError) {
        let codec = contexts.codec!, packet = contexts.packet!
        if state == .draining {
            // The decoder wants input after the flush: it has nothing more to give.
            state = .finished
            return
        }
        let read: Int32
        if pendingPacket {
            pendingPacket = false
            read = 0
        } else {
            read = av_read_frame(contexts.format, packet)
        }
        // A source that failed is final (it did its own retrying): no "end of file", no error budget.
        if read < 0, let failure = contexts.io?.sourceFailure { throw failure }
        if read == cassette_averror_eof() {
            state = .draining
            _ = avcodec_send_packet(codec, nil)
            return
        }
        guard read >= 0 else {
            try countError(read, "av_read_frame")
            return
        }
        defer { av_packet_unref(packet) }
        guard packet.pointee.stream_index == streamIndex else { return }
        let sent = avcodec_send_packet(codec, packet)
        if sent < 0 && sent != cassette_averror_eagain() { try countError(sent, "avcodec_send_packet") }
    }

    private func countError(_ err: Int32, _ what: String) throws(DecoderError) {
        consecutiveErrors += 1
        if consecutiveErrors > Self.maxConsecutiveDecodeErrors {
            throw DecoderError(.decodeFailed, "\(what) (\(consecutiveErrors) errors in a row)", ffmpeg: err)
        }
    }

    /// Converts one decoded frame; nil when it produced nothing to return (resampler priming,
    /// or wholly before a seek target).
    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(DecoderError) -> AudioChunk? {
        let input = Resampler.Input(
            format: frame.pointee.format, sampleRate: frame.pointee.sample_rate,
            channels: frame.pointee.ch_layout.nb_channels)
        if input != resampler.input {
            // The stream changed format mid-way; what the old resampler held is dropped.
            resampler = try Resampler(input: input, layout: frame.pointee.ch_layout, output: outputFormat)
        }
        var start = nextPresentationTime
        let timestamp = frame.pointee.best_effort_timestamp
        if timestamp != cassette_av_nopts_value() {
            // Output lags input by what the resampler holds back.
            let buffered = Double(resampler.bufferedFrames) / Double(outputFormat.sampleRate)
            let time = Double(timestamp - startTimestamp) * timeBase - buffered - timeOffset
            // With a leading trim, times before 0 are the encoder delay, dropped by `discardUntil`.
            start = timeOffset > 0 ? time : max(0, time)
        }
        return try makeChunk(resampler.convert(frame), startingAt: start)
    }

    /// Wraps converted bytes, trimming the part before a pending seek target.
    private func makeChunk(_ converted: [UInt8], startingAt start: Double) throws(DecoderError) -> AudioChunk? {
        var bytes = converted
        var start = start
        let rate = Double(outputFormat.sampleRate)
        let bytesPerFrame = outputFormat.bytesPerFrame
        if let target = discardUntil {
            let frames = bytes.count / bytesPerFrame
            let skip = Int(((target - start) * rate).rounded())
            if skip >= frames {
                nextPresentationTime = start + Double(frames) / rate
                return nil
            }
            if skip > 0 {
                bytes.removeFirst(skip * bytesPerFrame)
                start = target
            }
            discardUntil = nil
        }
        if let end = endTime {
            // The container's count of real samples: what follows is the encoder's padding.
            let allowed = Int((end * rate).rounded()) - Int((start * rate).rounded())
            if allowed <= 0 {
                state = .finished
                return nil
            }
            if allowed * bytesPerFrame < bytes.count { bytes.removeLast(bytes.count - allowed * bytesPerFrame) }
        }
        let frames = bytes.count / bytesPerFrame
        guard frames > 0 else { return nil }
        nextPresentationTime = start + Double(frames) / rate
        return AudioChunk(samples: bytes, frameCount: frames, presentationTime: start)
    }
}
