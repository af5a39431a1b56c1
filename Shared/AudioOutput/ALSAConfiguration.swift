import CALSA

/// ALSA's global configuration (alsa.conf, /etc/asound.conf, `~/.asoundrc`, or the files
/// `ALSA_CONFIG_PATH` names), which `PCMOutput(device:configuration:)` resolves names in.
public enum ALSAConfiguration {
    /// Forgets the cached global configuration and reads it again from the files, so that a PCM
    /// defined after the process started (a file added to `ALSA_CONFIG_PATH`, an edited
    /// asound.conf, a card plugged in later) is found by the next open. ALSA by itself only
    /// notices a change of the top-level files' times.
    ///
    /// Call it only on the thread that owns the output, with no PCM open: it also unloads the
    /// plugin libraries ALSA cached.
    public static func reload() {
        snd_config_update_free_global()
        _ = snd_config_update()
    }
}
