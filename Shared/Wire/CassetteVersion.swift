/// The Cassette release, printed by every binary's `--version` and in `service.status`.
/// The one place it is written: `make deb` reads it from this line for the package version.
public enum CassetteVersion {
    public static let string = "0.1.0"
}
