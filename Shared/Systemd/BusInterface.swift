import CSystemd
import Foundation

/// One D-Bus interface a `BusConnection` serves on an object: its methods, signals and
/// read-only properties. sd-bus answers `Introspect`, `Properties.Get`/`GetAll` and builds
/// `PropertiesChanged` from this description; the closures run on the connection's thread and
/// must not block (read a snapshot, hand work on).
public struct BusInterface: Sendable {
    public struct Method: Sendable {
        public var name: String
        /// The arguments' signature ("" for none); sd-bus refuses calls that do not match it.
        public var signature: String
        /// Runs when the method is called; the call is answered with an empty reply after it.
        /// The arguments are not read: the methods served take none or ignore them.
        public var action: @Sendable () -> Void

        public init(_ name: String, signature: String = "", action: @escaping @Sendable () -> Void) {
            self.name = name
            self.signature = signature
            self.action = action
        }
    }

    public struct Property: Sendable {
        /// Whether a change is announced with `PropertiesChanged` (value included) or the
        /// value never changes (`const`), or neither (clients ask when they need it, e.g. a position).
        public enum Change: Sendable {
            case emits, constant, silent
        }

        public var name: String
        public var signature: String
        public var change: Change

        public init(_ name: String, _ signature: String, _ change: Change) {
            self.name = name
            self.signature = signature
            self.change = change
        }
    }

    public var name: String
    public var methods: [Method]
    /// Signals the interface declares (name, signature), for introspection.
    public var signals: [(name: String, signature: String)]
    public var properties: [Property]
    /// A property's value by name; its type must match the declared signature.
    public var value: @Sendable (String) -> BusValue

    public init(
        name: String, methods: [Method] = [], signals: [(name: String, signature: String)] = [], properties: [Property] = [],
        value: @escaping @Sendable (String) -> BusValue
    ) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
        self.value = value
    }
}

/// An interface registered on a connection: the sd-bus vtable built from it and the C strings
/// it points into, kept alive (and at a fixed address) until the registration is dropped.
final class BusRegistration {
    let interface: BusInterface
    let vtable: UnsafeMutablePointer<sd_bus_vtable>
    private let count: Int
    private var strings: [UnsafeMutablePointer<CChar>] = []
    var slot: OpaquePointer?

    init(_ interface: BusInterface) {
        self.interface = interface
        count = interface.methods.count + interface.signals.count + interface.properties.count + 2
        vtable = .allocate(capacity: count)
        var at = vtable
        // Every member is callable by anyone the bus lets through: the bus policy decides who.
        let open = UInt64(SD_BUS_VTABLE_UNPRIVILEGED)
        cassette_sd_bus_vtable_start(at, open)
        for method in interface.methods {
            at += 1
            cassette_sd_bus_vtable_method(at, keep(method.name), keep(method.signature), keep(""), Self.methodHandler, open)
        }
        for signal in interface.signals {
            at += 1
            cassette_sd_bus_vtable_signal(at, keep(signal.name), keep(signal.signature))
        }
        for property in interface.properties {
            at += 1
            let flags: UInt64 =
                switch property.change {
                case .emits: UInt64(SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)
                case .constant: UInt64(SD_BUS_VTABLE_PROPERTY_CONST)
                case .silent: 0
                }
            cassette_sd_bus_vtable_property(at, keep(property.name), keep(property.signature), Self.propertyGetter, flags)
        }
        cassette_sd_bus_vtable_end(at + 1)
    }

    deinit {
        if let slot { sd_bus_slot_unref(slot) }
        vtable.deallocate()
        strings.forEach { free($0) }
    }

    private func keep(_ s: String) -> UnsafePointer<CChar> {
        let copy = strdup(s)!
        strings.append(copy)
        return UnsafePointer(copy)
    }

    private static func registration(_ userdata: UnsafeMutableRawPointer?) -> BusRegistration {
        Unmanaged<BusRegistration>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private static let methodHandler: sd_bus_message_handler_t = { message, userdata, _ in
        let registration = registration(userdata)
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        registration.interface.methods.first { $0.name == member }?.action()
        return cassette_sd_bus_reply_empty(message)
    }

    private static let propertyGetter: sd_bus_property_get_t = { _, _, _, property, reply, userdata, _ in
        let registration = registration(userdata)
        let name = property.map { String(cString: $0) } ?? ""
        return registration.interface.value(name).append(to: reply!)
    }
}
