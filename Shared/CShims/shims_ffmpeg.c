#include "shims_ffmpeg.h"
#include <errno.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <stdio.h>

int cassette_averror(int posix_errno) { return AVERROR(posix_errno); }
int cassette_averror_eof(void) { return AVERROR_EOF; }
int cassette_averror_eagain(void) { return AVERROR(EAGAIN); }
int cassette_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
int cassette_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
int64_t cassette_av_nopts_value(void) { return AV_NOPTS_VALUE; }
void cassette_av_strerror(int errnum, char *buf, size_t size) {
    if (av_strerror(errnum, buf, size) < 0) snprintf(buf, size, "FFmpeg error %d", errnum);
}
