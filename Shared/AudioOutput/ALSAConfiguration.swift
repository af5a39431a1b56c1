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

    /// Why `device` cannot be a playback PCM, found without opening it (nil: no reason known).
    /// The name must be defined in ALSA's configuration (`null`, `default`, `hw`, a PCM of
    /// asound.conf…), and a `hw:`/`plughw:` name's card must exist. Opening would be the full
    /// test, but it has effects (a `file` PCM truncates its file, a `hw` device is busy for a
    /// moment), which a health check repeated every few seconds must not have. Any thread:
    /// it takes its own reference to the configuration.
    public static func deviceProblem(_ device: String) -> String? {
        var top: OpaquePointer? = nil
        guard snd_config_update_ref(&top) >= 0, let top else { return "ALSA's configuration cannot be read" }
        defer { snd_config_unref(top) }
        var found: OpaquePointer? = nil
        let err = snd_config_search_definition(top, "pcm", device, &found)
        guard err >= 0 else {
            return "no PCM named \(device) in ALSA's configuration (\(String(cString: snd_strerror(err))))"
        }
        if let found { snd_config_delete(found) }
        if let card = card(of: device), snd_card_get_index(card) < 0 {
            return "no sound card \(card) for \(device)"
        }
        return nil
    }

    /// The card of a `hw:`/`plughw:` name (`hw:1`, `hw:1,0`, `plughw:CARD=PCH,DEV=0`), else nil.
    static func card(of device: String) -> String? {
        guard device.hasPrefix("hw:") || device.hasPrefix("plughw:"),
            let colon = device.firstIndex(of: ":")
        else { return nil }
        var first = device[device.index(after: colon)...].prefix { $0 != "," }
        if first.hasPrefix("CARD=") { first = first.dropFirst("CARD=".count) }
        return first.isEmpty ? nil : String(first)
    }
}
