import Wire

/// One connection to the reporter (`reporter.sock`), opened on first use, for handing over
/// closed play events (`playlog.record`) and metric events (`metrics.record`). An answer means the reporter stored the event
/// durably (or already had it: it is known by `eventId`, so a second hand-over is harmless).
struct ReporterLink: Sendable {
    let socketPath: String
    private var client: RPCClient?

    init(socketPath: String) { self.socketPath = socketPath }

    /// Returns once the reporter has the event; throws what the reporter (or the socket) said.
    mutating func record(_ kind: ReportRecord.Kind, _ body: JSONValue) async throws {
        if client == nil { client = try await RPCClient.connect(path: socketPath) }
        do {
            _ = try await client!.call(kind.method, ["event": body], timeout: .seconds(15))
        } catch {
            if !(error is RPCError) { await close() }
            throw error
        }
    }

    mutating func close() async {
        await client?.close()
        client = nil
    }
}
