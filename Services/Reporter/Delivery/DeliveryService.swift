import ServiceLifecycle

/// The delivery loop as a member of the daemon's service group. On SIGTERM it is stopped
/// first (the group shuts down in reverse order); a request cut off then is simply sent
/// again after the restart: nothing leaves `pending` without the origin's answer.
struct DeliveryService: Service {
    let engine: DeliveryEngine

    func run() async throws {
        await withGracefulShutdownHandler {
            await engine.run()
        } onGracefulShutdown: {
            engine.bell.close()
        }
    }
}
