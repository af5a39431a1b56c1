import CFFmpeg

/// The encoder delay and padding libavformat leaves in the decoded audio, so that consecutive
/// tracks cut from one recording join without a gap.
///
/// What libavformat (5.x) already trims, and is left alone here: the MP3 LAME/Xing delay and
/// padding, the Opus pre-skip and end trim, and the start of an MP4 edit list. What it leaves:
/// the end of an MP4 edit list (AAC's last frame of padding comes out, ~20 ms of near-silence
/// between tracks), and files that carry only iTunes' `iTunSMPB` tag (delay and padding both
/// come out). The decision needs the first packet (does the demuxer skip the delay itself?),
/// so it is made there, before any audio is returned.
struct GaplessTrim: Equatable {
    /// Source frames to drop at the very start of the stream (delay nobody else removes).
    var leadingFrames = 0
    /// Source frames of real audio after the leading part; output stops there. Nil: no end trim.
    var validFrames: Int?

    /// `iTunSMPB`: " 00000000 DDDDDDDD PPPPPPPP NNNNNNNNNNNNNNNN …" in hex — delay, padding, count.
    struct ITunesInfo: Equatable {
        var delay: Int
        var padding: Int
        var count: Int

        init?(_ text: String) {
            let fields = text.split(separator: " ").compactMap { Int($0, radix: 16) }
            guard fields.count >= 4, fields[1] >= 0, fields[2] >= 0, fields[3] > 0 else { return nil }
            (delay, padding, count) = (fields[1], fields[2], fields[3])
        }
    }

    /// What the container says before reading packets.
    struct Hints {
        var isMP4: Bool
        var iTunes: ITunesInfo?
        /// The stream's duration in source frames (for MP4 with an edit list: the edit's length).
        var durationFrames: Int?
        /// Packets × frames per packet, when both are known: the length with all padding.
        var codedFrames: Int?
        var frameSize: Int
    }

    /// Decides once the first packet is known. `demuxerSkips`: that packet starts before the
    /// stream's start or carries skip-samples side data, i.e. libavformat removes the delay.
    static func decide(_ hints: Hints, demuxerSkips: Bool) -> GaplessTrim {
        guard hints.isMP4 else { return GaplessTrim() }
        if demuxerSkips, let duration = hints.durationFrames, duration > 0 {
            // An edit list: its duration is the real audio. Trusted only when it removes no more
            // than a few frames of padding from what is coded, so a wrong header cannot cut music.
            if let coded = hints.codedFrames, hints.frameSize > 0,
                coded > duration, coded - duration <= 3 * hints.frameSize
            {
                return GaplessTrim(leadingFrames: 0, validFrames: duration)
            }
        }
        if let smpb = hints.iTunes {
            return GaplessTrim(leadingFrames: demuxerSkips ? 0 : smpb.delay, validFrames: smpb.count)
        }
        return GaplessTrim()
    }

    /// Reads the hints of `stream` in `format`.
    static func hints(format: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>) -> Hints {
        let name = String(cString: format.pointee.iformat.pointee.name)
        let params = stream.pointee.codecpar.pointee
        let rate = Double(params.sample_rate)
        var duration: Int?
        if stream.pointee.duration != cassette_av_nopts_value(), stream.pointee.duration > 0, rate > 0 {
            duration = Int((Double(stream.pointee.duration) * av_q2d(stream.pointee.time_base) * rate).rounded())
        }
        let frameSize = Int(params.frame_size)
        let packets = Int(stream.pointee.nb_frames)
        let tag = metadata("iTunSMPB", stream.pointee.metadata) ?? metadata("iTunSMPB", format.pointee.metadata)
        return Hints(
            isMP4: name.contains("mp4"), iTunes: tag.flatMap(ITunesInfo.init),
            durationFrames: duration, codedFrames: frameSize > 0 && packets > 0 ? frameSize * packets : nil,
            frameSize: frameSize)
    }

    private static func metadata(_ key: String, _ dictionary: OpaquePointer?) -> String? {
        guard let dictionary, let entry = av_dict_get(dictionary, key, nil, 0),
            let value = entry.pointee.value
        else { return nil }
        return String(cString: value)
    }

    /// Whether `packet` shows libavformat dropping the start itself.
    static func demuxerSkips(_ packet: UnsafeMutablePointer<AVPacket>, startTimestamp: Int64) -> Bool {
        var size: Int = 0
        if let data = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 4 {
            let skip = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24
            if skip > 0 { return true }
        }
        return packet.pointee.pts != cassette_av_nopts_value() && packet.pointee.pts < startTimestamp
    }
}
