import CSystemd
import Foundation
import Logging

/// A swift-log handler that writes structured entries to journald: metadata become
/// journal fields (upper-cased), so `journalctl CASSETTE_SERVICE=player` works; a
/// `LogMessageID` becomes `MESSAGE_ID=`. The code location is swift-log's (`CODE_FILE`,
/// `CODE_LINE`, `CODE_FUNC`): the C shim suppresses libsystemd's own, which would name the shim.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let (text, fields) = Self.entry(event, label: label, metadata: metadata)
        let cFields = fields.map { strdup($0) }
        defer { cFields.forEach { free($0) } }
        let pointers = cFields.map { UnsafePointer<CChar>($0) }
        _ = pointers.withUnsafeBufferPointer { buf in
            cassette_sd_journal_send(text, Self.priority(event.level), buf.baseAddress, buf.count)
        }
    }

    /// The entry's text (the message and its metadata, for `journalctl`'s plain view) and its
    /// fields other than MESSAGE and PRIORITY.
    static func entry(_ event: LogEvent, label: String, metadata: Logger.Metadata) -> (text: String, fields: [String]) {
        var merged = metadata
        event.metadata?.forEach { merged[$0.key] = $0.value }
        if let error = event.error { merged["error"] = "\(error)" }
        var fields = [
            "SYSLOG_IDENTIFIER=\(label)", "CODE_FILE=\(event.file)", "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
        ]
        if let id = merged.removeValue(forKey: LogMessageID.metadataKey) {
            fields.append("MESSAGE_ID=\(id)")
        }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            let name = key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
            fields.append("CASSETTE_\(String(name))=\(value)")
        }
        let text =
            merged.isEmpty
            ? event.message.description
            : event.message.description + " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return (text, fields)
    }

    /// syslog(3) priorities, as journald expects them.
    static func priority(_ level: Logger.Level) -> Int32 {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }
}

public enum LogBootstrap {
    /// journald when stderr is connected to it (`JOURNAL_STREAM` names stderr's device and
    /// inode, systemd.exec(5)); plain stderr otherwise, e.g. under a test or a terminal.
    public static func bootstrap(label: String, level: Logger.Level = .info) {
        let toJournal = stderrIsJournal()
        LoggingSystem.bootstrap { name in
            var handler: LogHandler =
                toJournal
                ? JournalLogHandler(label: label)
                : TerminalLogHandler(StreamLogHandler.standardError(label: name))
            handler.logLevel = level
            return handler
        }
    }

    static func stderrIsJournal() -> Bool {
        guard let value = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }
}

/// stderr's handler without the journal-only `LogMessageID`: a line a person reads.
struct TerminalLogHandler: LogHandler {
    private var inner: StreamLogHandler

    init(_ inner: StreamLogHandler) { self.inner = inner }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.metadata?.removeValue(forKey: LogMessageID.metadataKey)
        inner.log(event: event)
    }
}
