import Foundation
import Logging
import NIOConcurrencyHelpers
import OriginClient
import Pacing
import ServiceLifecycle
import Wire

/// TIDAL's streaming privilege (docs/origin.md, "Streaming privileges"): while the engine plays a
/// stream, one session is held at the origin — started with `POST /v1/streaming/sessions`, kept
/// with a heartbeat at the interval the origin gives, ended with `DELETE` once nothing streams.
/// A 409 on a heartbeat means another device of the account took the privilege: the engine is
/// told (it pauses and reports `StreamingPrivilegesRevoked`) and the session is gone. Offline
/// playback never asks for one.
///
/// The engine only says whether it streams (`setStreaming`, which never waits); the loop in `run`
/// does every request, so the engine is never held up by the origin.
final class StreamingPrivilege: Sendable {
    struct Device: Sendable {
        var id: String
        var name: String
    }

    private struct Session {
        var id: String
        var heartbeat: Duration
        var nextBeat: ContinuousClock.Instant
    }

    /// How long to wait before asking again for a session the origin did not grant.
    static let retryInterval: Duration = .seconds(5)
    /// Ending the session at a stop: one try, short enough for the stop's budget (an origin that
    /// does not answer lets the session lapse by its missed heartbeats instead).
    static let closeAtStop = RetryPolicy(statusRetries: 0, networkRetries: 0, maxNetworkDelay: 0, deadlineSeconds: 2)

    private let origin: OriginClient
    private let device: Device
    private let logger: Logger
    private let wanted = NIOLockedValueBox(false)
    private let stopping = NIOLockedValueBox(false)
    private let wakeup = Doorbell<Ring>()
    /// Called when another device took the privilege, with its name.
    private let onRevoked: @Sendable (String) async -> Void

    init(origin: OriginClient, device: Device, logger: Logger, onRevoked: @escaping @Sendable (String) async -> Void) {
        self.origin = origin
        self.device = device
        self.logger = logger
        self.onRevoked = onRevoked
    }

    /// Whether the engine streams now; a change wakes the loop.
    func setStreaming(_ streaming: Bool) {
        let changed = wanted.withLockedValue { value in
            defer { value = streaming }
            return value != streaming
        }
        if changed { wakeup.ring() }
    }

    /// Ends the loop (at graceful shutdown); the held session is ended first.
    func stop() {
        stopping.withLockedValue { $0 = true }
        wakeup.ring()
    }

    func run() async {
        var session: Session?
        while !stopping.withLockedValue({ $0 }) {
            let wantsSession = wanted.withLockedValue { $0 }
            if wantsSession, session == nil {
                session = await open()
                if session == nil {
                    await wakeup.wait(upTo: Self.retryInterval)
                    continue
                }
            } else if !wantsSession, let held = session {
                await close(held)
                session = nil
            }
            guard var held = session else {
                await wakeup.wait()
                continue
            }
            let left = held.nextBeat - .now
            if left > .zero {
                await wakeup.wait(upTo: left)
                continue
            }
            held.nextBeat = .now + held.heartbeat
            session = held
            if let otherDevice = await beat(held) {
                session = nil
                wanted.withLockedValue { $0 = false }
                logger.notice("streaming privilege taken by \(otherDevice)")
                await onRevoked(otherDevice)
            }
        }
        if let held = session { await close(held) }
    }

    /// Asks for a session; a stop cuts the request off (nil, nothing logged).
    private func open() async -> Session? {
        do {
            let answer = try await cancelWhenGracefulShutdown { [origin, device] in
                try await origin.post(
                    "/v1/streaming/sessions",
                    body: ["deviceId": .string(device.id), "deviceName": .string(device.name)],
                    retry: .none)
            }
            guard let id = answer["sessionId"]?.stringValue, OriginID.isValid(id) else {
                logger.warning("streaming session: the origin named no usable sessionId")
                return nil
            }
            let seconds = max(1, answer["heartbeatSeconds"]?.doubleValue ?? 30)
            let interval = Duration.milliseconds(Int64(seconds * 1000))
            logger.info("streaming session \(id) started (heartbeat every \(seconds) s)")
            return Session(id: id, heartbeat: interval, nextBeat: .now + interval)
        } catch is CancellationError {
            return nil
        } catch {
            logger.warning("streaming session could not be started: \(error)")
            return nil
        }
    }

    /// One heartbeat; the other device's name when the privilege was taken (409). A stop cuts
    /// the request off.
    private func beat(_ session: Session) async -> String? {
        do {
            _ = try await cancelWhenGracefulShutdown { [origin] in
                try await origin.post("/v1/streaming/sessions/\(session.id)/heartbeat", body: [:], retry: .none)
            }
            return nil
        } catch is CancellationError {
            return nil
        } catch let error as OriginError where error.status == 409 {
            return error.answer?["otherDevice"]?.stringValue ?? "another device"
        } catch {
            // A missed heartbeat is no revocation: the next one tells.
            logger.info("streaming heartbeat failed: \(error)")
            return nil
        }
    }

    private func close(_ session: Session) async {
        let retry: RetryPolicy = stopping.withLockedValue { $0 } ? Self.closeAtStop : .none
        do {
            _ = try await origin.delete("/v1/streaming/sessions/\(session.id)", retry: retry)
            logger.info("streaming session \(session.id) ended")
        } catch {
            logger.info("streaming session \(session.id) could not be ended: \(error)")
        }
    }
}

/// The privilege loop as a member of the daemon's service group.
struct StreamingPrivilegeService: Service {
    let privilege: StreamingPrivilege

    func run() async throws {
        await withGracefulShutdownHandler {
            await privilege.run()
        } onGracefulShutdown: {
            privilege.stop()
        }
    }
}

extension StreamingPrivilege.Device {
    /// This device as the origin sees it: the host's name (`deviceName` in the player's settings
    /// overrides it), the same at every start.
    static func local(name: String?) -> StreamingPrivilege.Device {
        var buffer = [UInt8](repeating: 0, count: 256)
        let named = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { gethostname($0.baseAddress!, $0.count) == 0 }
        }
        let host = named ? String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self) : "cassette"
        return StreamingPrivilege.Device(id: "cassette-" + host, name: name ?? host)
    }
}
