import HTTPClient
import OriginClient
import Pacing
import ServiceKit
import Wire

/// The reporter's composition: the outbox (durable, group-committed writes), the delivery
/// loop that empties it into the origin, and the `playlog.*` / `consumption.*` methods.
enum Reporter {
    @Sendable static func build(_ context: DaemonContext) async throws -> DaemonParts {
        let settings = try ReporterSettings(section: context.settings.config.reporter)
        let client = try context.settings.originClient()
        let events = ReporterEvents(hub: context.hub)
        let bell = Doorbell<DeliveryWake>()
        let outbox = Outbox(context: context, maxQueueBytes: settings.maxQueueBytes, stored: { bell.ring(.newRecords) })
        let engine = DeliveryEngine(
            outbox: outbox, client: client, settings: settings, events: events, logger: context.logger,
            bell: bell)
        var router = RPCRouter()
        PlaylogMethods(outbox: outbox, engine: engine, events: events).register(on: &router)
        return DaemonParts(
            router: router, services: [DeliveryService(engine: engine)],
            statusLine: { await ReporterStatusLine.text(engine: engine, outbox: outbox) },
            status: .now({
                ["origin": context.settings.origin.map { .string($0) } ?? .null]
            }), healthProblems: ReporterFleet.problems(engine, outbox), metrics: ReporterFleet.metrics(outbox),
            totals: ReporterFleet.totals(engine))
    }
}
