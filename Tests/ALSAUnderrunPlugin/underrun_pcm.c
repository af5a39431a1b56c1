// An ALSA playback PCM for tests (type `cassette_underrun`): it takes every frame at once, like
// `null`, and underruns exactly once, after `underrunAfter` frames since it was opened: the
// write that crosses that count is taken, then the stream is in XRUN, so the next write gets
// -EPIPE and the writer must recover (snd_pcm_prepare) and write again. Nothing is lost.
//
//   pcm_type.cassette_underrun { lib "/path/to/libCassetteUnderrunPCM.so" }
//   pcm.underrun_sink { type cassette_underrun underrunAfter 44100 }
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    snd_pcm_ioplug_t io;
    snd_pcm_uframes_t consumed; // frames taken since the last prepare (the hardware pointer)
    snd_pcm_uframes_t total;    // frames taken since the PCM was opened
    snd_pcm_uframes_t underrunAfter;
    int underrunDone;
} underrun_pcm;

static int underrun_start(snd_pcm_ioplug_t *io) { (void)io; return 0; }
static int underrun_stop(snd_pcm_ioplug_t *io) { (void)io; return 0; }

static int underrun_prepare(snd_pcm_ioplug_t *io) {
    underrun_pcm *pcm = io->private_data;
    pcm->consumed = 0;
    return 0;
}

static snd_pcm_sframes_t underrun_pointer(snd_pcm_ioplug_t *io) {
    underrun_pcm *pcm = io->private_data;
    return (snd_pcm_sframes_t)(pcm->consumed % io->buffer_size);
}

static snd_pcm_sframes_t underrun_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                           snd_pcm_uframes_t offset, snd_pcm_uframes_t size) {
    (void)areas;
    (void)offset;
    underrun_pcm *pcm = io->private_data;
    pcm->consumed += size;
    pcm->total += size;
    if (!pcm->underrunDone && pcm->total >= pcm->underrunAfter) {
        pcm->underrunDone = 1;
        snd_pcm_ioplug_set_state(io, SND_PCM_STATE_XRUN);
    }
    return (snd_pcm_sframes_t)size;
}

static int underrun_close(snd_pcm_ioplug_t *io) {
    free(io->private_data);
    return 0;
}

static const snd_pcm_ioplug_callback_t underrun_callbacks = {
    .start = underrun_start,
    .stop = underrun_stop,
    .pointer = underrun_pointer,
    .transfer = underrun_transfer,
    .close = underrun_close,
    .prepare = underrun_prepare,
};

SND_PCM_PLUGIN_DEFINE_FUNC(cassette_underrun) {
    (void)root;
    long underrunAfter = 44100;
    snd_config_iterator_t i, next;
    snd_config_for_each(i, next, conf) {
        snd_config_t *entry = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(entry, &id) < 0) continue;
        if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint")) continue;
        if (!strcmp(id, "underrunAfter")) {
            if (snd_config_get_integer(entry, &underrunAfter) < 0 || underrunAfter < 1) {
                SNDERR("underrunAfter must be a positive integer");
                return -EINVAL;
            }
            continue;
        }
        SNDERR("Unknown field %s", id);
        return -EINVAL;
    }
    if (stream != SND_PCM_STREAM_PLAYBACK) return -EINVAL;
    underrun_pcm *pcm = calloc(1, sizeof(*pcm));
    if (!pcm) return -ENOMEM;
    pcm->underrunAfter = (snd_pcm_uframes_t)underrunAfter;
    pcm->io.version = SND_PCM_IOPLUG_VERSION;
    pcm->io.name = "Cassette test PCM that underruns once";
    pcm->io.callback = &underrun_callbacks;
    pcm->io.private_data = pcm;
    int err = snd_pcm_ioplug_create(&pcm->io, name, stream, mode);
    if (err < 0) {
        free(pcm);
        return err;
    }
    static const unsigned int accesses[] = { SND_PCM_ACCESS_RW_INTERLEAVED };
    static const unsigned int formats[] = { SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE };
    snd_pcm_ioplug_set_param_list(&pcm->io, SND_PCM_IOPLUG_HW_ACCESS, 1, accesses);
    snd_pcm_ioplug_set_param_list(&pcm->io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats);
    snd_pcm_ioplug_set_param_minmax(&pcm->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8);
    snd_pcm_ioplug_set_param_minmax(&pcm->io, SND_PCM_IOPLUG_HW_RATE, 8000, 384000);
    snd_pcm_ioplug_set_param_minmax(&pcm->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20);
    snd_pcm_ioplug_set_param_minmax(&pcm->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 1024);
    *pcmp = pcm->io.pcm;
    return 0;
}

SND_PCM_PLUGIN_SYMBOL(cassette_underrun);
