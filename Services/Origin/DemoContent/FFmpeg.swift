import Foundation

/// Thin wrappers over the `ffmpeg` / `ffprobe` command-line tools, used only by `generate`.
///
/// The origin is a development tool: shelling out keeps it free of the libav C modules that
/// the player owns, and the CLI is what a developer would use by hand to check the numbers.
enum FFmpeg {
    /// `CASSETTE_FFMPEG` overrides the binary, for machines where it is not on the usual path.
    static var ffmpegPath: String {
        ProcessInfo.processInfo.environment["CASSETTE_FFMPEG"] ?? locate("ffmpeg")
    }

    static var ffprobePath: String {
        ProcessInfo.processInfo.environment["CASSETTE_FFPROBE"] ?? locate("ffprobe")
    }

    /// Sample format every measurement decodes to, so tracks of different codecs and rates
    /// can be concatenated for album gain (the replaygain filter accepts 44.1 kHz float).
    static let measureFormat = "aresample=44100,aformat=sample_fmts=flt:sample_rates=44100:channel_layouts=stereo"

    /// Runs ffmpeg with `arguments`; throws with the tail of its log when it fails.
    /// Returns the log (stderr), where filters such as `replaygain` print their results.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let args = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info"] + arguments
        let (status, _, log) = try execute(ffmpegPath, args, captureStdout: false)
        guard status == 0 else {
            throw OriginError(description: "ffmpeg \(arguments.joined(separator: " ")) failed (\(status)): \(log.suffix(800))")
        }
        return log
    }

    /// ReplayGain 1.0 gain (dB) and peak (linear) of the given files played back to back:
    /// one file gives the track values, an album's files give the album values.
    static func replayGain(of paths: [String]) throws -> (gain: Double, peak: Double) {
        precondition(!paths.isEmpty)
        var arguments: [String] = []
        for path in paths { arguments += ["-i", path] }
        var graph = ""
        for index in paths.indices { graph += "[\(index):a]\(measureFormat)[a\(index)];" }
        graph += paths.indices.map { "[a\($0)]" }.joined()
        graph += "concat=n=\(paths.count):v=0:a=1,replaygain[out]"
        arguments += ["-filter_complex", graph, "-map", "[out]", "-f", "null", "-"]
        let log = try run(arguments)
        guard let gain = value(after: "track_gain = ", in: log),
            let peak = value(after: "track_peak = ", in: log)
        else { throw OriginError(description: "replaygain printed no result for \(paths)") }
        return ((gain * 100).rounded() / 100, (peak * 1_000_000).rounded() / 1_000_000)
    }

    /// Container duration in seconds as ffprobe reports it.
    static func duration(of path: String) throws -> Double {
        let args = ["-v", "error", "-show_entries", "format=duration", "-of", "default=noprint_wrappers=1:nokey=1", path]
        let (status, out, _) = try execute(ffprobePath, args, captureStdout: true)
        guard status == 0, let seconds = Double(out.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw OriginError(description: "ffprobe could not read the duration of \(path)")
        }
        return (seconds * 1000).rounded() / 1000
    }

    /// Parses the number after `marker`, e.g. `+12.28` in `track_gain = +12.28 dB`.
    private static func value(after marker: String, in log: String) -> Double? {
        guard let range = log.range(of: marker, options: .backwards) else { return nil }
        let rest = log[range.upperBound...]
        let token = rest.prefix { !$0.isWhitespace }
        return Double(token.hasPrefix("+") ? String(token.dropFirst()) : String(token))
    }

    private static func locate(_ name: String) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "/usr/bin/\(name)"
    }

    /// Runs a tool to completion. Only one pipe is ever read, so a chatty tool cannot block
    /// on a full pipe we are not draining: the other stream goes to /dev/null.
    private static func execute(_ executable: String, _ arguments: [String], captureStdout: Bool)
        throws -> (Int32, String, String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardInput = FileHandle.nullDevice
        if captureStdout {
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = pipe
        }
        do {
            try process.run()
        } catch {
            throw OriginError(description: "cannot start \(executable): \(error)")
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        return captureStdout ? (process.terminationStatus, text, "") : (process.terminationStatus, "", text)
    }
}
