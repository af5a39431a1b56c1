import ServiceKit
import Wire

/// The downloader's composition. The offline engine, network monitor and storage policy
/// arrive with their issues; for now it serves the common methods on its socket.
enum Downloader {
    @Sendable static func build(_ context: DaemonContext) async throws -> DaemonParts {
        DaemonParts(status: {
            ["origin": context.settings.origin.map { .string($0) } ?? .null]
        })
    }
}
