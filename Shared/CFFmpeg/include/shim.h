// FFmpeg for Swift, imported only by MediaDecoder. The `cassette_` functions stand in for
// function-like macros and FFERRTAG constants Swift cannot import.
//
// No binary links FFmpeg: loader.c defines the FFmpeg functions Cassette calls, and each one
// opens the libraries the first time any is called (see cassette_ffmpeg_load). A player that
// has not decoded yet has not mapped FFmpeg's ~140 libraries: it starts faster and idles in
// less memory.
#ifndef CASSETTE_CFFMPEG_SHIM_H
#define CASSETTE_CFFMPEG_SHIM_H
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/aes.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>

/// Opens libavutil, libavcodec, libavformat and libswresample, once per process; call it before
/// any FFmpeg function. NULL when they are open, else the loader's message (a library missing
/// from the device). Blocks while it maps them: call it where blocking is allowed.
const char *cassette_ffmpeg_load(void);

/// AVERROR(e) is a macro: negates a POSIX errno the way FFmpeg does on this platform.
static inline int cassette_averror(int posix_errno) { return AVERROR(posix_errno); }
/// AVERROR_EOF and AVERROR(EAGAIN) are macros built with FFERRTAG / AVERROR.
static inline int cassette_averror_eof(void) { return AVERROR_EOF; }
static inline int cassette_averror_eagain(void) { return AVERROR(EAGAIN); }
/// AVERROR_DECODER_NOT_FOUND and AVERROR_INVALIDDATA are FFERRTAG macros.
static inline int cassette_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int cassette_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
/// AV_NOPTS_VALUE is a macro with a cast Swift does not import.
static inline int64_t cassette_av_nopts_value(void) { return AV_NOPTS_VALUE; }
/// av_err2str is a macro over a compound literal; this writes into the caller's buffer.
static inline void cassette_av_strerror(int errnum, char *buf, size_t size) {
    if (av_strerror(errnum, buf, size) < 0) snprintf(buf, size, "FFmpeg error %d", errnum);
}
#endif
