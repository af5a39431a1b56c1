#ifndef CASSETTE_SHIMS_FFMPEG_H
#define CASSETTE_SHIMS_FFMPEG_H
#include <stdint.h>
#include <stddef.h>

/// AVERROR(e) is a macro: negates a POSIX errno the way FFmpeg does on this platform.
int cassette_averror(int posix_errno);
/// AVERROR_EOF and AVERROR(EAGAIN) are macros built with FFERRTAG / AVERROR.
int cassette_averror_eof(void);
int cassette_averror_eagain(void);
/// AVERROR_DECODER_NOT_FOUND and AVERROR_INVALIDDATA are FFERRTAG macros.
int cassette_averror_decoder_not_found(void);
int cassette_averror_invaliddata(void);
/// AV_NOPTS_VALUE is a macro with a cast Swift does not import.
int64_t cassette_av_nopts_value(void);
/// av_err2str is a macro over a compound literal; this writes into the caller's buffer.
void cassette_av_strerror(int errnum, char *buf, size_t size);
#endif
