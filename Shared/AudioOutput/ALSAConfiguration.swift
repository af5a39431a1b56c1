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

    /// Whether alsa-lib's own messages (written to stderr) are discarded. A caller that tries a
    /// device again and again turns them off after the first failure, whose reason it reports
    /// itself. Process-wide: call it from the thread that owns the output.
    public static func setQuiet(_ quiet: Bool) {
        cassette_snd_lib_quiet(quiet ? 1 : 0)
    }
}
