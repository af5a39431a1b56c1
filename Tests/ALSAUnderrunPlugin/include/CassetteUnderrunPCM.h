// The plugin has no API of its own: alsa-lib finds `_snd_pcm_cassette_underrun_open` by name.
