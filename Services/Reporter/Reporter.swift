import ServiceKit
import Wire

/// The reporter's composition. The outbox and delivery loop arrive with their issue; for
/// now it serves the common methods on its socket.
enum Reporter {
    @Sendable static func build(_ context: DaemonContext) async throws -> DaemonParts {
        DaemonParts(status: {
            ["origin": context.settings.origin.map { .string($0) } ?? .null]
        })
    }
}
