// The FFmpeg functions Cassette calls, each forwarding to the real one in a library opened on
// first use. Why not link FFmpeg: libavformat and libavcodec pull in about 140 shared libraries
// (codecs, image and subtitle libraries, GnuTLS...). Linked, the dynamic loader maps and relocates
// all of them before main, on every start of the player, and their pages stay resident while it
// idles; opened here, only a player that decodes pays for them, once.
//
// Each definition repeats the prototype of FFmpeg's own header, which shim.h includes: the
// compiler refuses one that does not match. A function added to MediaDecoder without a
// definition here fails the link with an undefined reference, not at run time.

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim.h"

enum library { AVUTIL, AVCODEC, AVFORMAT, SWRESAMPLE, LIBRARY_COUNT };

// The sonames of the major versions the headers describe: the ABI this file was compiled for.
static const char *const sonames[LIBRARY_COUNT] = {
    [AVUTIL] = "libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR),
    [AVCODEC] = "libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR),
    [AVFORMAT] = "libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR),
    [SWRESAMPLE] = "libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR),
};

static void *handles[LIBRARY_COUNT];
static char load_error[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_libraries(void) {
    for (int i = 0; i < LIBRARY_COUNT; i++) {
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (handles[i] == NULL) {
            const char *why = dlerror();
            snprintf(load_error, sizeof load_error, "cannot open %s: %s", sonames[i], why ? why : "unknown error");
            return;
        }
    }
}

const char *cassette_ffmpeg_load(void) {
    pthread_once(&load_once, load_libraries);
    return load_error[0] ? load_error : NULL;
}

// Callers check cassette_ffmpeg_load first, so failing here is a bug or a damaged install.
static void *resolve(enum library library, const char *name) {
    const char *error = cassette_ffmpeg_load();
    if (error != NULL) {
        fprintf(stderr, "cassette: %s called without FFmpeg: %s\n", name, error);
        abort();
    }
    void *symbol = dlsym(handles[library], name);
    if (symbol == NULL) {
        fprintf(stderr, "cassette: %s has no %s\n", sonames[library], name);
        abort();
    }
    return symbol;
}

// One forwarding definition; the pointer is resolved on the first call and cached (an atomic
// pointer: two threads resolving at once store the same value). Hidden: the definitions serve
// this binary's own calls and never stand in for FFmpeg inside the libraries once opened.
#define FORWARD(library, ret, name, params, args)                                       \
    __attribute__((visibility("hidden"))) ret name params {                               \
        static ret(*cached) params;                                                         \
        ret(*target) params = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                  \
        if (target == NULL) {                                                               \
            target = (ret(*) params)resolve(library, #name);                                \
            __atomic_store_n(&cached, target, __ATOMIC_RELEASE);                           \
        }                                                                                   \
        return target args;                                                                 \
    }

#define FORWARD_VOID(library, name, params, args)                                        \
    __attribute__((visibility("hidden"))) void name params {                              \
        static void(*cached) params;                                                        \
        void(*target) params = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                 \
        if (target == NULL) {                                                               \
            target = (void(*) params)resolve(library, #name);                               \
            __atomic_store_n(&cached, target, __ATOMIC_RELEASE);                           \
        }                                                                                   \
        target args;                                                                        \
    }

// libavutil
FORWARD(AVUTIL, struct AVAES *, av_aes_alloc, (void), ())
FORWARD(AVUTIL, int, av_aes_init, (struct AVAES *a, const uint8_t *key, int key_bits, int decrypt),
        (a, key, key_bits, decrypt))
FORWARD_VOID(AVUTIL, av_aes_crypt, (struct AVAES *a, uint8_t *dst, const uint8_t *src, int count, uint8_t *iv, int decrypt),
             (a, dst, src, count, iv, decrypt))
FORWARD(AVUTIL, int, av_channel_layout_copy, (AVChannelLayout *dst, const AVChannelLayout *src), (dst, src))
FORWARD_VOID(AVUTIL, av_channel_layout_default, (AVChannelLayout *ch_layout, int nb_channels), (ch_layout, nb_channels))
FORWARD_VOID(AVUTIL, av_channel_layout_uninit, (AVChannelLayout *channel_layout), (channel_layout))
FORWARD(AVUTIL, AVDictionaryEntry *, av_dict_get,
        (const AVDictionary *m, const char *key, const AVDictionaryEntry *prev, int flags), (m, key, prev, flags))
FORWARD(AVUTIL, AVFrame *, av_frame_alloc, (void), ())
FORWARD_VOID(AVUTIL, av_frame_free, (AVFrame **frame), (frame))
FORWARD_VOID(AVUTIL, av_frame_unref, (AVFrame *frame), (frame))
FORWARD_VOID(AVUTIL, av_free, (void *ptr), (ptr))
FORWARD(AVUTIL, void *, av_malloc, (size_t size), (size))
FORWARD(AVUTIL, const char *, av_get_sample_fmt_name, (enum AVSampleFormat sample_fmt), (sample_fmt))
FORWARD(AVUTIL, int, av_strerror, (int errnum, char *errbuf, size_t errbuf_size), (errnum, errbuf, errbuf_size))

// libavcodec
FORWARD(AVCODEC, AVPacket *, av_packet_alloc, (void), ())
FORWARD_VOID(AVCODEC, av_packet_free, (AVPacket **pkt), (pkt))
FORWARD_VOID(AVCODEC, av_packet_unref, (AVPacket *pkt), (pkt))
FORWARD(AVCODEC, uint8_t *, av_packet_get_side_data, (const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size),
        (pkt, type, size))
FORWARD(AVCODEC, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))
FORWARD_VOID(AVCODEC, avcodec_free_context, (AVCodecContext **avctx), (avctx))
FORWARD_VOID(AVCODEC, avcodec_flush_buffers, (AVCodecContext *avctx), (avctx))
FORWARD(AVCODEC, const char *, avcodec_get_name, (enum AVCodecID id), (id))
FORWARD(AVCODEC, int, avcodec_open2, (AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options),
        (avctx, codec, options))
FORWARD(AVCODEC, int, avcodec_parameters_to_context, (AVCodecContext *codec, const AVCodecParameters *par), (codec, par))
FORWARD(AVCODEC, int, avcodec_send_packet, (AVCodecContext *avctx, const AVPacket *avpkt), (avctx, avpkt))
FORWARD(AVCODEC, int, avcodec_receive_frame, (AVCodecContext *avctx, AVFrame *frame), (avctx, frame))

// libavformat
FORWARD(AVFORMAT, AVFormatContext *, avformat_alloc_context, (void), ())
FORWARD(AVFORMAT, int, avformat_open_input,
        (AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options), (ps, url, fmt, options))
FORWARD(AVFORMAT, int, avformat_find_stream_info, (AVFormatContext *ic, AVDictionary **options), (ic, options))
FORWARD_VOID(AVFORMAT, avformat_close_input, (AVFormatContext **s), (s))
FORWARD(AVFORMAT, int, av_find_best_stream,
        (AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, int related_stream, const AVCodec **decoder_ret, int flags),
        (ic, type, wanted_stream_nb, related_stream, decoder_ret, flags))
FORWARD(AVFORMAT, int, av_read_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt))
FORWARD(AVFORMAT, int, av_seek_frame, (AVFormatContext *s, int stream_index, int64_t timestamp, int flags),
        (s, stream_index, timestamp, flags))

typedef int (*packet_io)(void *opaque, uint8_t *buf, int buf_size);
typedef int64_t (*seek_io)(void *opaque, int64_t offset, int whence);
FORWARD(AVFORMAT, AVIOContext *, avio_alloc_context,
        (unsigned char *buffer, int buffer_size, int write_flag, void *opaque, packet_io read_packet, packet_io write_packet, seek_io seek),
        (buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek))
FORWARD_VOID(AVFORMAT, avio_context_free, (AVIOContext **s), (s))

// libswresample
FORWARD(SWRESAMPLE, int, swr_alloc_set_opts2,
        (struct SwrContext **ps, AVChannelLayout *out_ch_layout, enum AVSampleFormat out_sample_fmt, int out_sample_rate,
         AVChannelLayout *in_ch_layout, enum AVSampleFormat in_sample_fmt, int in_sample_rate, int log_offset, void *log_ctx),
        (ps, out_ch_layout, out_sample_fmt, out_sample_rate, in_ch_layout, in_sample_fmt, in_sample_rate, log_offset, log_ctx))
FORWARD(SWRESAMPLE, int, swr_init, (struct SwrContext *s), (s))
FORWARD_VOID(SWRESAMPLE, swr_free, (struct SwrContext **s), (s))
FORWARD(SWRESAMPLE, int, swr_convert, (struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count),
        (s, out, out_count, in, in_count))
FORWARD(SWRESAMPLE, int64_t, swr_get_delay, (struct SwrContext *s, int64_t base), (s, base))
FORWARD(SWRESAMPLE, int, swr_get_out_samples, (struct SwrContext *s, int in_samples), (s, in_samples))
