import CShims
import Foundation
import Logging

/// A swift-log handler that writes structured entries to journald: metadata become
/// journal fields (upper-cased), so `journalctl CASSETTE_SERVICE=player` works.
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
        let (level, message, file, function, line) = (event.level, event.message, event.file, event.function, event.line)
        var merged = self.metadata
        event.metadata?.forEach { merged[$0.key] = $0.value }
        if let error = event.error { merged["error"] = "\(error)" }
        var fields = ["SYSLOG_IDENTIFIER=\(label)", "CODE_FILE=\(file)", "CODE_LINE=\(line)", "CODE_FUNC=\(function)"]
        for (key, value) in merged {
            let name = key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
            fields.append("CASSETTE_\(String(name))=\(value)")
        }
        let text = merged.isEmpty ? message.description
            : message.description + " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let cFields = fields.map { strdup($0) }
        defer { cFields.forEach { free($0) } }
        let pointers = cFields.map { UnsafePointer<CChar>($0) }
        _ = pointers.withUnsafeBufferPointer { buf in
            cassette_sd_journal_send(text, Self.priority(level), buf.baseAddress, buf.count)
        }
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
            var handler: LogHandler = toJournal ? JournalLogHandler(label: label) : StreamLogHandler.standardError(label: name)
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
