import Foundation

/// The CPUs a stress test gives the services: one core (a small device, started under
/// `taskset -c 0`) or every core of the machine.
public enum CoreSetting: String, CaseIterable, Sendable {
    case oneCore = "one-core"
    case allCores = "all-cores"

    /// The `taskset -c` list, or nil for no pinning.
    public var cores: String? {
        switch self {
        case .oneCore: "0"
        case .allCores: nil
        }
    }
}

/// One line of measured figures, with a prefix a closing note can grep for.
public func stressReport(_ test: String, _ setting: CoreSetting, _ figures: String) {
    print("STRESS \(test) [\(setting.rawValue)] \(figures)")
    fflush(nil)
}

extension CoreSetting {
    /// Whether process `pid` is confined to this setting's CPUs (always true for all cores).
    public func confines(_ pid: Int32) -> Bool {
        guard let cores else { return true }
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
        return line.map { $0.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces) } == cores
    }
}
