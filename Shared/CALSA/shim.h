// alsa-lib for Swift, imported only by AudioOutput. snd_pcm_hw_params_alloca and
// snd_pcm_sw_params_alloca are macros over alloca, which Swift cannot call; the `cassette_`
// functions allocate on the heap instead (free with snd_pcm_hw_params_free / _sw_params_free).
// `static inline`: only a binary that imports this module links libasound.
#ifndef CASSETTE_CALSA_SHIM_H
#define CASSETTE_CALSA_SHIM_H
#include <alsa/asoundlib.h>

static inline snd_pcm_hw_params_t *cassette_snd_pcm_hw_params_new(void) {
    snd_pcm_hw_params_t *p = NULL;
    return snd_pcm_hw_params_malloc(&p) == 0 ? p : NULL;
}
static inline snd_pcm_sw_params_t *cassette_snd_pcm_sw_params_new(void) {
    snd_pcm_sw_params_t *p = NULL;
    return snd_pcm_sw_params_malloc(&p) == 0 ? p : NULL;
}
#endif
