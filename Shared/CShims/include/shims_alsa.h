#ifndef CASSETTE_SHIMS_ALSA_H
#define CASSETTE_SHIMS_ALSA_H
#include <alsa/asoundlib.h>

/// snd_pcm_hw_params_alloca is a macro over alloca, which Swift cannot call;
/// these allocate on the heap instead. Free with snd_pcm_hw_params_free / _sw_params_free.
snd_pcm_hw_params_t *cassette_snd_pcm_hw_params_new(void);
snd_pcm_sw_params_t *cassette_snd_pcm_sw_params_new(void);
#endif
