import TestSupport
import XCTest

/// Gives each test its own origin process on a fresh copy of the shared catalog, so no test
/// sees another's plays, faults or clock offset.
class OriginTestCase: XCTestCase {
    private var running: OriginProcess?
    private var client: OriginAPI?

    var origin: OriginProcess {
        get throws {
            guard let running else { throw OriginTestError("origin not started") }
            return running
        }
    }

    var api: OriginAPI {
        get throws {
            guard let client else { throw OriginTestError("origin not started") }
            return client
        }
    }

    override func setUp() async throws {
        try await super.setUp()
        let started = try OriginProcess.start()
        running = started
        client = OriginAPI(origin: started)
    }

    override func tearDown() async throws {
        running?.discard()
        running = nil
        client = nil
        try await super.tearDown()
    }

    /// Restarts the origin process over the same data directory (and so the same play log).
    func restartOrigin() throws -> Int32 {
        let current = try origin
        let status = current.stop()
        let restarted = try OriginProcess.start(reusing: current.dataDirectory)
        running = restarted
        client = OriginAPI(origin: restarted)
        return status
    }
}
