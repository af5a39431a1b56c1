import XCTest

@testable import cassettectl

final class GlobalArgumentsTests: XCTestCase {
    func testOptionsBeforeTheCommandMoveBehindIt() {
        XCTAssertEqual(
            GlobalArguments.hoist(["--runtime-dir", "D", "--json", "--timeout", "5", "status"]),
            ["status", "--runtime-dir", "D", "--json", "--timeout", "5"])
        XCTAssertEqual(
            GlobalArguments.hoist(["--runtime-dir=D", "offline", "add", "tr-1", "--wait"]),
            ["offline", "add", "tr-1", "--wait", "--runtime-dir=D"])
        XCTAssertEqual(
            GlobalArguments.hoist(["--json", "call", "player", "player.seek", "{\"position\":1}"]),
            ["call", "player", "player.seek", "{\"position\":1}", "--json"])
    }

    func testArgumentsWithoutLeadingOptionsAreUntouched() {
        let given = ["status", "--json", "--runtime-dir", "D"]
        XCTAssertEqual(GlobalArguments.hoist(given), given)
        XCTAssertEqual(GlobalArguments.hoist([]), [])
        XCTAssertEqual(GlobalArguments.hoist(["--help"]), ["--help"])
        XCTAssertEqual(GlobalArguments.hoist(["--generate-completion-script", "bash"]), ["--generate-completion-script", "bash"])
    }

    func testTheOneAfterTheCommandWins() {
        XCTAssertEqual(GlobalArguments.hoist(["--timeout", "5", "now", "--timeout", "9"]), ["now", "--timeout", "9"])
        XCTAssertEqual(GlobalArguments.hoist(["--json", "now", "--json"]), ["now", "--json"])
    }

    func testMovedOptionsStayBeforeATerminator() {
        XCTAssertEqual(
            GlobalArguments.hoist(["--json", "call", "player", "m", "--", "--json"]),
            ["call", "player", "m", "--json", "--", "--json"])
    }

    func testAnOptionMissingItsValueIsLeftForTheParserToReport() {
        XCTAssertEqual(GlobalArguments.hoist(["--timeout"]), ["--timeout"])
    }
}
