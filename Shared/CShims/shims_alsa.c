#include "shims_alsa.h"

snd_pcm_hw_params_t *cassette_snd_pcm_hw_params_new(void) {
    snd_pcm_hw_params_t *p = NULL;
    return snd_pcm_hw_params_malloc(&p) == 0 ? p : NULL;
}
snd_pcm_sw_params_t *cassette_snd_pcm_sw_params_new(void) {
    snd_pcm_sw_params_t *p = NULL;
    return snd_pcm_sw_params_malloc(&p) == 0 ? p : NULL;
}
