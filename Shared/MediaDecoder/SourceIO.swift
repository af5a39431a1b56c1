import CFFmpeg

#if canImport(Glibc)
    import Glibc
#endif

/// libavformat's view of a `ByteSource`: an `AVIOContext` whose read and seek callbacks call the
/// source. Owns the context and its buffer (freed in deinit, after the format context that uses
/// them is closed) and keeps the source's first error, so the decoder can report *that* (a failed
/// download, an origin refusal) instead of FFmpeg's generic I/O error.
///
/// Lives on the decoder's thread like the rest of the decoder; the callbacks run inside
/// `avformat_*`/`av_read_frame` calls on that thread.
final class SourceIO {
    let source: any ByteSource
    /// Where the next read starts, as FFmpeg sees it.
    private(set) var position: Int64 = 0
    /// The first error the source threw; once set, every read and seek fails.
    private(set) var failure: (any Error)?
    private(set) var context: UnsafeMutablePointer<AVIOContext>?

    /// The AVIO buffer: large enough that FFmpeg's small reads do not each become a source call.
    static let bufferSize = 64 * 1024

    init(source: any ByteSource) throws(DecoderError) {
        self.source = source
        guard let buffer = av_malloc(Self.bufferSize) else {
            throw DecoderError(code: .codecOpenFailed, message: "av_malloc(\(Self.bufferSize)) failed")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.bufferSize), 0, opaque,
            sourceIORead, nil, sourceIOSeek)
        guard context != nil else {
            av_free(buffer)
            throw DecoderError(code: .codecOpenFailed, message: "avio_alloc_context failed")
        }
    }

    deinit {
        if let context {
            // FFmpeg may have replaced the buffer it was given; free the one it holds now.
            av_free(context.pointee.buffer)
            context.pointee.buffer = nil
        }
        avio_context_free(&context)
    }

    /// The decoder error to throw when a libav call failed because the source did.
    var sourceFailure: DecoderError? {
        failure.map { DecoderError(sourceFailure: $0) }
    }

    fileprivate func read(_ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
        guard failure == nil else { return cassette_averror(EIO) }
        guard let buffer, size > 0 else { return 0 }
        do {
            let count = try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)))
            if count == 0 { return cassette_averror_eof() }
            position += Int64(count)
            return Int32(count)
        } catch {
            failure = error
            return cassette_averror(EIO)
        }
    }

    fileprivate func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        let mode = whence & ~AVSEEK_FORCE
        if mode == AVSEEK_SIZE { return source.size ?? Int64(cassette_averror(ENOSYS)) }
        guard failure == nil else { return Int64(cassette_averror(EIO)) }
        let target: Int64
        switch mode {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        case SEEK_END:
            guard let size = source.size else { return Int64(cassette_averror(ENOSYS)) }
            target = size + offset
        default: return Int64(cassette_averror(EINVAL))
        }
        guard target >= 0 else { return Int64(cassette_averror(EINVAL)) }
        do {
            try source.seek(to: target)
        } catch {
            failure = error
            return Int64(cassette_averror(EIO))
        }
        position = target
        return target
    }
}

private func sourceIORead(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    Unmanaged<SourceIO>.fromOpaque(opaque!).takeUnretainedValue().read(buffer, size)
}

private func sourceIOSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    Unmanaged<SourceIO>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence)
}
