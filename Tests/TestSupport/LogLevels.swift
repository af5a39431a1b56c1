extension ServiceProcess {
    /// The lines of the service's log at `warning` or above. Under a test the services log to
    /// stderr in swift-log's stream format, `<time> <level> <label>: <message>`; under systemd
    /// the same levels become journald priorities (warning 4, error 3, critical 2).
    public var warningOrWorseLines: [String] {
        log.split(separator: "\n").map(String.init).filter { line in
            let fields = line.split(separator: " ", maxSplits: 2)
            return fields.count == 3 && ["warning", "error", "critical"].contains(fields[1])
        }
    }

    /// The lines of the service's log at `critical`.
    public var criticalLines: [String] {
        warningOrWorseLines.filter { $0.split(separator: " ", maxSplits: 2)[1] == "critical" }
    }
}
