import Foundation
import Logging
import StateDB
import Systemd
import Wire

/// `policy.get|set` and `network.get|set`, one change at a time: a change is validated whole,
/// persisted, handed to the gate and enforced on running transfers before the call answers.
actor PolicyController {
    private let gate: PolicyGate
    private let store: PolicyStore
    private let monitor: NetworkMonitor
    private let engine: DownloadEngine
    private let enforcer: PolicyEnforcer
    private let events: DownloaderEvents
    private let logger: Logger

    init(
        gate: PolicyGate, store: PolicyStore, monitor: NetworkMonitor, engine: DownloadEngine,
        enforcer: PolicyEnforcer, events: DownloaderEvents, logger: Logger
    ) {
        self.logger = logger
        self.gate = gate
        self.store = store
        self.monitor = monitor
        self.engine = engine
        self.enforcer = enforcer
        self.events = events
    }

    func getPolicy() -> JSONValue { describe(gate.policy) }

    func setPolicy(_ params: JSONValue) async throws -> JSONValue {
        guard let changes = params.objectValue ?? (params == .null ? [:] : nil) else {
            throw RPCError.invalidParams("params must be an object of policy keys.")
        }
        let current = gate.policy
        let next = try current.applying(changes)
        if next != current {
            do {
                try await store.save(next)
            } catch let error as StateDBError where error.code == .storageFull {
                throw error
            } catch {
                throw DownloaderError.storage("the policy could not be saved in the catalog: \(error)")
            }
            gate.update(policy: next)
            if next.maxParallel != current.maxParallel { await engine.setMaxParallel(next.maxParallel) }
            let changed = changes.keys.sorted().map { "\($0)=\(changes[$0].map(Self.plain) ?? "")" }
            logger.notice(
                "download policy changed",
                metadata: LogMessageID.policyChanged.metadata(
                    ["changed": "\(changed.joined(separator: " "))"]))
            events.publish(.policyChanged(describe(next).objectValue ?? [:]))
            await enforcer.enforce()
        }
        return describe(next)
    }

    /// A policy value as an operator writes it: `true`, `1000000`, `HIGH`, `null`.
    private static func plain(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        default: String(decoding: JSONCoding.data(value), as: UTF8.self)
        }
    }

    func getNetwork() async -> JSONValue {
        let state = await monitor.state
        var data = state.json
        data["overridden"] = .bool(await monitor.isOverridden)
        let verdict = gate.verdict
        data["downloads"] = .string(verdict.name)
        switch verdict {
        case .allowed: data["reason"] = .null
        case .perItem(let block, let reason), .blocked(let block, let reason):
            data["reason"] = .string(reason)
            data["block"] = .string(block.rawValue)
        }
        return .object(data)
    }

    struct NetworkParams: ClosedParams, Sendable {
        var type: String
        var metered: Bool?
        var interface: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case type, metered, interface }
    }

    func setNetwork(_ p: NetworkParams) async throws -> JSONValue {
        if p.type == "auto" {
            await monitor.setOverride(nil)
        } else {
            guard let type = NetworkType(rawValue: p.type) else {
                throw RPCError.invalidParams("params.type must be wifi, ethernet, cellular, none or auto.")
            }
            if let name = p.interface, !(1...15).contains(name.utf8.count) {
                throw RPCError.invalidParams("params.interface must be 1…15 bytes (an interface name).")
            }
            await monitor.setOverride(
                NetworkState(
                    type: type, metered: p.metered ?? (type == .cellular),
                    interface: type == .none ? nil : p.interface, source: "override"))
        }
        return await getNetwork()
    }

    private func describe(_ policy: DownloadPolicy) -> JSONValue {
        guard case .object(var fields) = policy.json else { return policy.json }
        fields["downloads"] = .string(gate.verdict.name)
        fields["downloadWindow"] = policy.schedule.json(at: Date())
        return .object(fields)
    }
}
