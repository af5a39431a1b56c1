import CSystemd
import Foundation
import Synchronization

/// Which D-Bus bus to connect to.
public enum BusAddress: Sendable, Equatable {
    /// `DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket.
    case system
    /// `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`.
    case session
    /// A D-Bus address such as `unix:path=/run/x`.
    case address(String)
}

/// A connection that serves objects on a bus under a well-known name, through sd-bus.
///
/// An `sd_bus` is not thread-safe: the connection is opened, served and closed on one thread
/// of the caller's (`serve` blocks it until stopped or the connection is lost). Other threads
/// only queue `PropertiesChanged` signals and ask for a stop, both of which wake `serve`.
public final class BusConnection: @unchecked Sendable {
    /// Why the bus could not be used: `name` is stable (`BusUnreachable`, `NameTaken`,
    /// `NameRefused`, `BusLost`, `BusFailed`), `message` says what happened in words.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let name: String
        public let message: String
        public var description: String { "\(name): \(message)" }
    }

    private struct Pending {
        var changed: [(path: String, interface: String, names: [String])] = []
        var stopping = false
    }

    private let bus: OpaquePointer
    /// An eventfd that wakes `serve` (queued signals, a stop).
    private let wakeup: Int32
    private let pending = Mutex(Pending())
    private var registrations: [BusRegistration] = []

    /// Connects (blocking: call it on the serving thread); throws `BusUnreachable` when there
    /// is no bus at the address or it does not let this process in.
    public init(_ address: BusAddress, callTimeoutSeconds: Double = 5) throws(Failure) {
        var handle: OpaquePointer?
        var r: Int32
        switch address {
        case .system: r = sd_bus_open_system(&handle)
        case .session: r = sd_bus_open_user(&handle)
        case .address(let text):
            r = sd_bus_new(&handle)
            if r >= 0, let handle {
                r = sd_bus_set_address(handle, text)
                if r >= 0 { r = sd_bus_set_bus_client(handle, 1) }
                if r >= 0 { r = sd_bus_start(handle) }
                if r < 0 { sd_bus_unref(handle) }
            }
        }
        guard r >= 0, let handle else {
            throw Failure(name: "BusUnreachable", message: "cannot connect to the bus (\(Self.text(r)))")
        }
        let fd = cassette_wakeup_fd()
        guard fd >= 0 else {
            sd_bus_flush_close_unref(handle)
            throw Failure(name: "BusFailed", message: "eventfd: \(Self.text(-errno))")
        }
        bus = handle
        wakeup = fd
        _ = sd_bus_set_method_call_timeout(bus, UInt64(max(0.05, callTimeoutSeconds) * 1_000_000))
    }

    deinit {
        registrations.removeAll()
        sd_bus_flush_close_unref(bus)
        close(wakeup)
    }

    /// Serves `interface` on the object at `path` (before the name is requested, so that a
    /// client that sees the name appear finds the object).
    public func add(_ interface: BusInterface, at path: String) throws(Failure) {
        let registration = BusRegistration(interface)
        var slot: OpaquePointer?
        let r = sd_bus_add_object_vtable(
            bus, &slot, path, interface.name, registration.vtable, Unmanaged.passUnretained(registration).toOpaque())
        guard r >= 0 else { throw Failure(name: "BusFailed", message: "serving \(interface.name): \(Self.text(r))") }
        registration.slot = slot
        registrations.append(registration)
    }

    /// Takes the well-known `name` (no queueing, no replacement): `NameTaken` when another
    /// connection owns it, `NameRefused` when the bus's policy does not allow this process to.
    public func requestName(_ name: String) throws(Failure) {
        let r = sd_bus_request_name(bus, name, 0)
        guard r < 0 else { return }
        switch -r {
        case EEXIST, EALREADY:
            throw Failure(name: "NameTaken", message: "another connection owns \(name)")
        case EACCES, EPERM:
            throw Failure(name: "NameRefused", message: "the bus's policy does not allow this user to own \(name)")
        default:
            throw Failure(name: "BusFailed", message: "requesting \(name): \(Self.text(r))")
        }
    }

    /// Queues a `PropertiesChanged` signal for the named properties (sd-bus reads their values
    /// when it sends it); callable from any thread.
    public func propertiesChanged(path: String, interface: String, names: [String]) {
        guard !names.isEmpty else { return }
        pending.withLock { $0.changed.append((path, interface, names)) }
        ring()
    }

    /// Makes `serve` return; callable from any thread.
    public func stop() {
        pending.withLock { $0.stopping = true }
        ring()
    }

    /// Answers calls and sends queued signals until `stop()`; throws `BusLost` when the bus
    /// closes the connection (the daemon stopped or restarted).
    public func serve() throws(Failure) {
        while true {
            let (changed, stopping) = pending.withLock { p in
                defer { p.changed = [] }
                return (p.changed, p.stopping)
            }
            if stopping { return }
            for signal in changed { emit(signal.path, signal.interface, signal.names) }
            let r = sd_bus_process(bus, nil)
            if r < 0 { throw Failure(name: "BusLost", message: "the bus connection ended (\(Self.text(r)))") }
            if r > 0 { continue }
            try wait()
        }
    }

    private func emit(_ path: String, _ interface: String, _ names: [String]) {
        var copies = names.map { strdup($0) } + [nil]
        defer { copies.forEach { free($0) } }
        _ = copies.withUnsafeMutableBufferPointer { sd_bus_emit_properties_changed_strv(bus, path, interface, $0.baseAddress) }
    }

    /// Waits for the bus's socket, sd-bus's own timeout or a wakeup.
    private func wait() throws(Failure) {
        var fds = [
            pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
            pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
        ]
        var until: UInt64 = 0
        var timeout: Int32 = -1
        if sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            timeout = until <= nowMicros ? 0 : Int32(min((until - nowMicros + 999) / 1000, UInt64(Int32.max)))
        }
        let r = poll(&fds, nfds_t(fds.count), timeout)
        if r < 0 && errno != EINTR { throw Failure(name: "BusFailed", message: "poll: \(Self.text(-errno))") }
        if fds[1].revents != 0 {
            var count: UInt64 = 0
            _ = read(wakeup, &count, 8)
        }
    }

    private func ring() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    static func text(_ r: Int32) -> String { String(cString: strerror(abs(r))) }
}
