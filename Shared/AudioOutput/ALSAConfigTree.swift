import CALSA

/// A private ALSA configuration tree: a copy of the system one (alsa.conf, so names like `null`
/// and `hw:0` still resolve) with the caller's text loaded on top. Lets a test or a device image
/// define its own PCMs without touching /etc/asound.conf.
///
/// Owns the `snd_config_t *`; `PCMOutput` keeps it until the PCM opened from it is closed.
final class ALSAConfigTree {
    let root: OpaquePointer

    init(text: String) throws(AudioOutputError) {
        var top: OpaquePointer? = nil
        var global: OpaquePointer? = nil
        // Returns 1 when it (re)read the files, 0 when the cached tree was current.
        if snd_config_update_ref(&global) >= 0, let global {
            _ = snd_config_copy(&top, global)
            snd_config_unref(global)
        }
        if top == nil {
            let err = snd_config_top(&top)
            guard err == 0, top != nil else { throw AudioOutputError(.invalidConfig, "snd_config_top", alsa: err) }
        }
        guard let top else { throw AudioOutputError(code: .invalidConfig, message: "no configuration tree") }

        var input: OpaquePointer? = nil
        var err = text.withCString { snd_input_buffer_open(&input, $0, text.utf8.count) }
        if err == 0, let input {
            err = snd_config_load(top, input)
            snd_input_close(input)
        }
        guard err == 0 else {
            snd_config_delete(top)
            throw AudioOutputError(.invalidConfig, "loading the ALSA configuration text", alsa: err)
        }
        root = top
    }

    deinit { snd_config_delete(root) }
}
