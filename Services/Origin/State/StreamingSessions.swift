import Foundation
import Synchronization

/// Streaming privileges (docs/origin.md): one device of the account streams at a time. Starting
/// a session takes the privilege from whichever session held it; the session that lost it hears
/// 409 (subStatus 4090) with the new holder's name at its next heartbeat.
final class StreamingSessions: Sendable {
    struct Session: Sendable {
        var id: String
        var deviceId: String
        var deviceName: String
    }

    struct State: Sendable {
        /// The session holding the privilege.
        var holder: Session?
        /// Sessions that lost it, with the name of the device that took it.
        var revoked: [String: String] = [:]
        var started = 0
        var heartbeats = 0
        var ended = 0
    }

    enum Heartbeat: Sendable {
        case active
        case revoked(otherDevice: String)
        case unknown
    }

    /// Seconds between heartbeats the origin asks for (`serve --heartbeat-seconds`).
    let heartbeatSeconds: Int
    private let state = Mutex(State())

    init(heartbeatSeconds: Int) {
        self.heartbeatSeconds = heartbeatSeconds
    }

    /// A new session for the device, which now holds the privilege.
    func start(deviceId: String, deviceName: String) -> Session {
        let session = Session(id: "ss-" + UUID().uuidString.lowercased(), deviceId: deviceId, deviceName: deviceName)
        state.withLock { state in
            if let holder = state.holder { state.revoked[holder.id] = deviceName }
            state.holder = session
            state.started += 1
        }
        return session
    }

    func heartbeat(_ sessionId: String) -> Heartbeat {
        state.withLock { state in
            state.heartbeats += 1
            if state.holder?.id == sessionId { return .active }
            if let other = state.revoked[sessionId] { return .revoked(otherDevice: other) }
            return .unknown
        }
    }

    /// Ends a session; false when no such session is open (held or revoked).
    func end(_ sessionId: String) -> Bool {
        state.withLock { state in
            if state.holder?.id == sessionId {
                state.holder = nil
            } else if state.revoked.removeValue(forKey: sessionId) == nil {
                return false
            }
            state.ended += 1
            return true
        }
    }

    func reset() {
        state.withLock { $0 = State() }
    }

    var snapshot: State { state.withLock { $0 } }
}
