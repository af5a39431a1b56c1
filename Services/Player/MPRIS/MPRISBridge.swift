import BlockingIO
import Foundation
import Logging
import Pacing
import Synchronization
import Systemd
import Wire

/// The player's MPRIS presence on D-Bus: a thread of its own connects to the chosen bus, serves
/// `MPRISObject` and takes the stable name `org.mpris.MediaPlayer2.cassette` (no per-process
/// suffix, so a client bound to the name finds the player again after a restart). Calls are
/// answered on that thread from the last state read and handed to the engine as commands, so
/// neither the cooperative pool nor an event loop ever waits on the bus. A bus that is missing,
/// refuses the name or goes away never touches playback: the thread says why in `status` and
/// tries again after `Backoff`'s wait.
final class MPRISBridge: Sendable {
    static let busName = "org.mpris.MediaPlayer2.cassette"
    /// From 1 s doubled up to a minute: a system bus that starts after the player is found soon,
    /// a box without one costs a failed connect a minute.
    static let retry = Backoff(initial: 1, cap: 60, jitter: 0.2)

    /// Where the bridge stands, as `service.status` shows it under `mpris`.
    enum Phase: String, Sendable {
        case off, connecting, serving, waiting, stopped
    }

    private struct Shared {
        var state = MPRISState()
        var phase = Phase.connecting
        var problem: BusConnection.Failure?
        var failures = 0
        var connection: BusConnection?
        var stopping = false
    }

    let choice: MPRISBusChoice
    private let logger: Logger
    private let shared: Mutex<Shared>
    /// Wakes the thread out of a wait between attempts when the player stops.
    private let pause = NSCondition()
    private let commandInput: AsyncStream<MPRISCommand>.Continuation
    /// The controls MPRIS clients sent, in order, for the engine.
    let commands: AsyncStream<MPRISCommand>

    init(choice: MPRISBusChoice, logger: Logger) {
        self.choice = choice
        self.logger = logger
        var initial = Shared()
        if choice == .off { initial.phase = .off }
        shared = Mutex(initial)
        (commands, commandInput) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    /// Starts the bus thread (nothing when MPRIS is off).
    func start() {
        guard case .bus(let address) = choice else { return }
        NamedThread.start("mpris") { self.run(address) }
    }

    /// Leaves the bus (the name is released) and ends `commands`.
    func stop() {
        let connection = shared.withLock { s -> BusConnection? in
            s.stopping = true
            return s.connection
        }
        connection?.stop()
        pause.lock()
        pause.broadcast()
        pause.unlock()
        commandInput.finish()
    }

    /// The player's state as read now; clients hear of what changed.
    func update(_ new: MPRISState) {
        let (names, connection) = shared.withLock { s -> ([String], BusConnection?) in
            let names = new.changed(from: s.state)
            s.state = new
            return (names, s.connection)
        }
        connection?.propertiesChanged(path: MPRISObject.path, interface: MPRISObject.playerInterface, names: names)
    }

    /// `service.status`'s `mpris`: the bus, the name, the phase and, while it cannot serve, why.
    var status: JSONValue {
        shared.withLock { s in
            [
                "bus": .string(choice.label), "name": .string(Self.busName), "state": .string(s.phase.rawValue),
                "problem": s.problem.map { ["name": .string($0.name), "message": .string($0.message)] } ?? .null,
                "failures": .number(Double(s.failures)),
            ]
        }
    }

    // MARK: The bus thread

    private func run(_ address: BusAddress) {
        let interfaces = MPRISObject.interfaces(
            state: { [weak self] in self?.shared.withLock { $0.state } ?? MPRISState() },
            send: { [weak self] in self?.commandInput.yield($0) })
        while !isStopping {
            setPhase(.connecting)
            do throws(BusConnection.Failure) {
                let connection = try BusConnection(address)
                for interface in interfaces { try connection.add(interface, at: MPRISObject.path) }
                try connection.requestName(Self.busName)
                let stopping = shared.withLock { s -> Bool in
                    s.connection = connection
                    return s.stopping
                }
                if stopping { break }
                served()
                defer { shared.withLock { $0.connection = nil } }
                try connection.serve()
            } catch {
                failed(error)
                waitBeforeRetry()
            }
        }
        setPhase(.stopped)
    }

    private var isStopping: Bool { shared.withLock { $0.stopping } }

    private func setPhase(_ phase: Phase) {
        shared.withLock { $0.phase = phase }
    }

    private func served() {
        let hadProblem = shared.withLock { s -> Bool in
            defer {
                s.phase = .serving
                s.problem = nil
                s.failures = 0
            }
            return s.problem != nil
        }
        logger.info("MPRIS: \(Self.busName) on the \(choice.label) bus\(hadProblem ? " again" : "")")
    }

    /// Records the failure and logs it when it differs from the last one (retries of the same
    /// are at debug). A bus that is not there is normal on a box without D-Bus: notice; a bus
    /// that refuses the name or fails otherwise is a misconfiguration: warning.
    private func failed(_ failure: BusConnection.Failure) {
        let (repeated, failures) = shared.withLock { s -> (Bool, Int) in
            let repeated = s.problem?.name == failure.name
            s.problem = failure
            s.failures += 1
            s.phase = .waiting
            return (repeated, s.failures)
        }
        let wait = Self.retry.nominal(afterFailures: failures)
        let line: Logger.Message = "MPRIS: not on the \(choice.label) bus: \(failure.description); trying again within \(Int(wait)) s"
        if repeated {
            logger.debug(line)
        } else if ["BusUnreachable", "BusLost"].contains(failure.name) {
            logger.notice(line)
        } else {
            logger.warning(line)
        }
    }

    private func waitBeforeRetry() {
        let failures = shared.withLock { $0.failures }
        let until = Date(timeIntervalSinceNow: Self.retry.delay(afterFailures: failures))
        pause.lock()
        defer { pause.unlock() }
        while !isStopping, pause.wait(until: until) {}
    }
}
