import CSystemd
import Foundation

/// A read-only client of the D-Bus system bus through sd-bus (libsystemd), for the few
/// property reads Cassette needs (NetworkManager's primary connection). Property reads are
/// blocking calls with a short timeout; one connection is used from one caller at a time,
/// which the lock guarantees, since an `sd_bus` object is not thread-safe.
public final class SystemBus: @unchecked Sendable {
    /// A failed bus call: `name` is the D-Bus error name when the bus gave one
    /// (e.g. `org.freedesktop.DBus.Error.ServiceUnknown`), else the errno text.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let name: String
        public let message: String
        public var description: String { "\(name): \(message)" }
    }

    private let bus: OpaquePointer
    private let lock = NSLock()

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` or /run/dbus/system_bus_socket).
    /// Throws at once when there is no bus, which is the normal case in containers.
    public init(callTimeoutSeconds: Double = 1) throws {
        var handle: OpaquePointer?
        let r = sd_bus_open_system(&handle)
        guard r >= 0, let handle else { throw Self.errno(-r, "sd_bus_open_system") }
        bus = handle
        _ = sd_bus_set_method_call_timeout(bus, UInt64(max(0.05, callTimeoutSeconds) * 1_000_000))
    }

    deinit { _ = sd_bus_flush_close_unref(bus) }

    /// A string (`s`) or object path (`o`) property.
    public func stringProperty(destination: String, path: String, interface: String, member: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: UnsafeMutablePointer<CChar>?
        let r = sd_bus_get_property_string(bus, destination, path, interface, member, &error, &value)
        guard r >= 0, let value else { throw Self.failure(error, r, member) }
        defer { free(value) }
        return String(cString: value)
    }

    /// A `u` (uint32) property, e.g. an enum such as NetworkManager's `Metered`.
    public func uint32Property(destination: String, path: String, interface: String, member: String) throws -> UInt32 {
        lock.lock()
        defer { lock.unlock() }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: UInt32 = 0
        let r = sd_bus_get_property_trivial(bus, destination, path, interface, member, &error, CChar(UInt8(ascii: "u")), &value)
        guard r >= 0 else { throw Self.failure(error, r, member) }
        return value
    }

    private static func failure(_ error: sd_bus_error, _ r: Int32, _ member: String) -> Failure {
        if let name = error.name {
            return Failure(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? member)
        }
        return Self.errno(-r, "reading \(member)")
    }

    private static func errno(_ code: Int32, _ what: String) -> Failure {
        Failure(name: "errno \(code)", message: "\(what): \(String(cString: strerror(code)))")
    }
}
