#if canImport(Glibc)
    import Glibc
#endif

/// A failure of a `ByteSource` defined in this module. `name` is stable (logs, the wire's
/// `error.data.name`, tests).
public struct ByteSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    /// The source was closed; a read or seek after (or during) `close()` gets this.
    public static func closed(_ what: String) -> ByteSourceError {
        ByteSourceError(name: "SourceClosed", message: "\(what) was closed")
    }

    /// The operating system refused to open, read or seek the file.
    public static func io(_ what: String, errno code: Int32) -> ByteSourceError {
        ByteSourceError(
            name: code == ENOENT || code == EACCES ? "FileNotFound" : "ReadFailed",
            message: "\(what): \(String(cString: strerror(code)))")
    }
}
