import Foundation
import Glibc
import Logging
import TestSupport
import XCTest

@testable import Systemd

/// The systemd glue against a real notify socket and real environment variables.
final class SystemdTests: XCTestCase {
    override func tearDown() {
        unsetenv("NOTIFY_SOCKET")
        unsetenv("JOURNAL_STREAM")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDNAMES")
    }

    func testNotifierSendsReadyWatchdogAndStopping() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let listener = try NotifyListener(path: dir.path + "/notify.sock")
        setenv("NOTIFY_SOCKET", listener.path, 1)
        let notifier = SystemdNotifier()
        XCTAssertTrue(notifier.isEnabled)
        notifier.ready(status: "listening")
        XCTAssertTrue(listener.wait(for: "READY=1", timeout: 5))
        XCTAssertTrue(listener.messages.last?.contains("STATUS=listening") ?? false)
        XCTAssertTrue(listener.messages.last?.contains("MAINPID=\(getpid())") ?? false)
        notifier.watchdog()
        XCTAssertTrue(listener.wait(for: "WATCHDOG=1", timeout: 5))
        notifier.stopping()
        XCTAssertTrue(listener.wait(for: "STOPPING=1", timeout: 5))
    }

    func testNotifierIsSilentWithoutNotifySocket() {
        unsetenv("NOTIFY_SOCKET")
        XCTAssertFalse(SystemdNotifier().isEnabled)
        SystemdNotifier().ready() // must not crash or block
    }

    func testSocketsMeantForAnotherProcessAreIgnored() {
        setenv("LISTEN_FDS", "1", 1)
        setenv("LISTEN_PID", "\(getpid() + 100_000)", 1)
        XCTAssertEqual(SocketActivation.inheritedSockets(), [])
    }

    func testServiceSocketIsChosenByName() {
        let sockets = [SocketActivation.Socket(fd: 3, name: "downloader"), SocketActivation.Socket(fd: 4, name: "player")]
        XCTAssertEqual(SocketActivation.socket(for: "player", in: sockets)?.fd, 4)
        XCTAssertNil(SocketActivation.socket(for: "reporter", in: sockets))
        let unitNamed = [SocketActivation.Socket(fd: 3, name: "cassette-reporter.socket")]
        XCTAssertEqual(SocketActivation.socket(for: "reporter", in: unitNamed)?.fd, 3)
        // A single unnamed socket is ours whatever its name.
        XCTAssertEqual(SocketActivation.socket(for: "reporter", in: [SocketActivation.Socket(fd: 3, name: "unknown")])?.fd, 3)
    }

    func testJournalIsChosenOnlyWhenStderrIsTheJournalStream() {
        unsetenv("JOURNAL_STREAM")
        XCTAssertFalse(LogBootstrap.stderrIsJournal())
        var st = stat()
        XCTAssertEqual(fstat(2, &st), 0)
        setenv("JOURNAL_STREAM", "\(st.st_dev):\(st.st_ino)", 1)
        XCTAssertTrue(LogBootstrap.stderrIsJournal())
        setenv("JOURNAL_STREAM", "\(st.st_dev):\(st.st_ino + 1)", 1)
        XCTAssertFalse(LogBootstrap.stderrIsJournal(), "a JOURNAL_STREAM inherited by a child with other stderr")
    }

    func testJournalEntryHasOneCodeLocationAMessageIDAndPlainFields() {
        let event = LogEvent(
            level: .info, message: "delivered to the origin",
            metadata: LogMessageID.playsDelivered.metadata(["count": "3"]),
            source: nil, file: "Reporter/DeliveryEngine.swift", function: "record(_:store:)", line: 42)
        let (text, fields) = JournalLogHandler.entry(event, label: "cassette-reporter", metadata: ["service": "reporter"])
        XCTAssertEqual(
            fields,
            [
                "SYSLOG_IDENTIFIER=cassette-reporter", "CODE_FILE=Reporter/DeliveryEngine.swift",
                "CODE_LINE=42", "CODE_FUNC=record(_:store:)",
                "MESSAGE_ID=\(LogMessageID.playsDelivered.rawValue)",
                "CASSETTE_COUNT=3", "CASSETTE_SERVICE=reporter",
            ])
        XCTAssertEqual(text, "delivered to the origin count=3 service=reporter")
    }

    func testMessageIDsAreDistinct128BitIDs() {
        let ids = LogMessageID.allCases.map(\.rawValue)
        XCTAssertEqual(Set(ids).count, ids.count)
        XCTAssertTrue(ids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    func testLogLevelsMapToSyslogPriorities() {
        XCTAssertEqual(JournalLogHandler.priority(.critical), 2)
        XCTAssertEqual(JournalLogHandler.priority(.error), 3)
        XCTAssertEqual(JournalLogHandler.priority(.warning), 4)
        XCTAssertEqual(JournalLogHandler.priority(.info), 6)
        XCTAssertEqual(JournalLogHandler.priority(.debug), 7)
    }
}
