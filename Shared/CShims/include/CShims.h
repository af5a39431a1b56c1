// Typed C functions for the parts of our C libraries that Swift cannot import:
// variadic functions (curl_easy_setopt, curl_easy_getinfo, sd_notifyf, sd_journal_send)
// and function-like macros (AVERROR, av_err2str, AV_NOPTS_VALUE, snd_pcm_hw_params_alloca).
// Every function is prefixed with `cassette_` and is imported only by the one Swift
// module that wraps its library.
#ifndef CASSETTE_SHIMS_H
#define CASSETTE_SHIMS_H
#include "shims_curl.h"
#include "shims_systemd.h"
#include "shims_alsa.h"
#include "shims_ffmpeg.h"
#endif
