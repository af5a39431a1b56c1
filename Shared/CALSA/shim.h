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
// snd_lib_error_set_handler takes a variadic C function, which Swift cannot define: this one
// discards alsa-lib's messages (an output retrying a missing device would print them every try).
static inline void cassette_snd_discard_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void cassette_snd_lib_quiet(int quiet) {
    snd_lib_error_set_handler(quiet ? cassette_snd_discard_error : NULL);
}
#endif
