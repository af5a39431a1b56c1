import Foundation
import Glibc

/// A one-line progress bar on stderr, drawn only when stderr is a terminal: piped or
/// redirected output (scripts, CI logs) gets no control characters at all, only the messages.
final class ProgressBar {
    let enabled: Bool
    private let label: String
    private let started = Date()
    private var drawn = false
    private var last: (fraction: Double, detail: String)?

    init(label: String, disabled: Bool = false) {
        self.label = label
        enabled = !disabled && isatty(STDERR_FILENO) == 1
    }

    /// Redraws the line; `fraction` is 0…1, `detail` says what the fraction counts, how fast
    /// and how long still (see `ProgressText`).
    func update(fraction: Double, detail: String) {
        last = (fraction, detail)
        guard enabled else { return }
        let columns = Self.terminalColumns()
        let clamped = max(0, min(1, fraction.isFinite ? fraction : 0))
        var tail = " \(String(format: "%3d", Int((clamped * 100).rounded(.down))))% \(detail)  \(Format.duration(Date().timeIntervalSince(started)))"
        let width = max(10, min(30, columns - label.count - 56))
        let room = columns - label.count - width - 4
        if tail.count > room { tail = String(tail.prefix(max(0, room - 1))) + "…" }
        let filled = Int((Double(width) * clamped).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        write("\r\u{1B}[2K\(label) [\(bar)]\(tail)")
        drawn = true
    }

    /// A message on a line of its own (`cassettectl: <text>`), above the bar when there is one.
    func message(_ text: String) {
        if enabled && drawn { write("\r\u{1B}[2K") }
        CtlOutput.error(text)
        if enabled, drawn, let last { update(fraction: last.fraction, detail: last.detail) }
    }

    /// Ends the bar's line so what follows starts on a fresh one.
    func finish() {
        guard enabled, drawn else { return }
        write("\n")
        drawn = false
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    private static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
