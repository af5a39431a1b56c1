import Pacing
import ServiceLifecycle
import Wire

/// MPRIS for the life of the daemon: the bridge's thread on the bus, the engine's state read
/// again after every `player` event (told by the event hub) and every `player.setNext` (which
/// publishes no event), and the controls clients send
/// carried out on the engine in the order they came.
struct MPRISService: Service {
    let bridge: MPRISBridge
    let engine: PlaybackEngine
    /// Rung by the event hub for every `player` event.
    let changes: Doorbell<Ring>

    init(bridge: MPRISBridge, engine: PlaybackEngine, hub: EventHub) {
        self.bridge = bridge
        self.engine = engine
        let changes = Doorbell<Ring>()
        hub.observe { topic, _ in
            if topic == "player" { changes.ring() }
        }
        self.changes = changes
    }

    func run() async throws {
        guard bridge.choice != .off else {
            try? await gracefulShutdown()
            return
        }
        bridge.start()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await command in bridge.commands { await engine.apply(command) }
                }
                group.addTask {
                    while await engine.nextChanges.wait() != nil { changes.ring() }
                }
                group.addTask {
                    repeat {
                        bridge.update(MPRISState(status: await engine.status()))
                    } while await changes.wait() != nil
                }
            }
        } onGracefulShutdown: {
            changes.close()
            engine.nextChanges.close()
            bridge.stop()
        }
    }
}
