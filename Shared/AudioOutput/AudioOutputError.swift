import CALSA

/// A failure of the ALSA output. `name` is stable (logs, the wire's `error.data.name`, tests).
public struct AudioOutputError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The PCM name is unknown, busy, or could not be opened.
        public static let openFailed = Code("OpenFailed")
        /// The ALSA configuration text did not parse.
        public static let invalidConfig = Code("InvalidConfig")
        /// The device refused the access mode, sample format, channel count or sizes.
        public static let formatUnsupported = Code("FormatUnsupported")
        /// `write` got samples of another type than the negotiated format, or a partial frame.
        public static let invalidSamples = Code("InvalidSamples")
        /// Writing failed and recovery (prepare/resume) did not help.
        public static let writeFailed = Code("WriteFailed")
        /// The device went away (USB unplugged: -ENODEV).
        public static let deviceGone = Code("DeviceGone")
        /// drain, drop, pause or delay failed.
        public static let operationFailed = Code("OperationFailed")
        /// The output was closed.
        public static let closed = Code("Closed")
    }

    public var code: Code
    /// What was attempted and ALSA's `snd_strerror` text.
    public var message: String
    /// The negative errno ALSA returned, if any.
    public var alsaError: Int32?

    public init(code: Code, message: String, alsaError: Int32? = nil) {
        self.code = code
        self.message = message
        self.alsaError = alsaError
    }

    public var name: String { code.name }

    public var description: String { "\(code.name): \(message)" }

    /// `what` failed with ALSA's negative error `error`.
    init(_ code: Code, _ what: String, alsa error: Int32) {
        self.init(code: code, message: "\(what): \(String(cString: snd_strerror(error)))", alsaError: error)
    }
}
