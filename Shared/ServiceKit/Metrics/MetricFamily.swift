/// One OpenMetrics metric family: its name (without `_total`), type, help text and samples.
public struct MetricFamily: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Only goes up; the sample is `<name>_total`.
        case counter
        /// Any value.
        case gauge
    }

    public struct Sample: Sendable, Equatable {
        public var labels: [(String, String)]
        public var value: Double

        public init(_ value: Double, labels: [(String, String)] = []) {
            self.value = value
            self.labels = labels
        }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.value == b.value && a.labels.elementsEqual(b.labels) { $0 == $1 }
        }
    }

    public var name: String
    public var kind: Kind
    public var help: String
    /// OpenMetrics' `# UNIT` (`bytes`, `seconds`): the name must end with `_<unit>`.
    public var unit: String?
    public var samples: [Sample]

    public init(_ name: String, _ kind: Kind, help: String, unit: String? = nil, samples: [Sample]) {
        self.name = name
        self.kind = kind
        self.help = help
        self.unit = unit
        self.samples = samples
    }

    public static func gauge(_ name: String, help: String, unit: String? = nil, _ value: Double) -> MetricFamily {
        MetricFamily(name, .gauge, help: help, unit: unit, samples: [Sample(value)])
    }

    /// `name` without its `_total`, which the exposition adds.
    public static func counter(_ name: String, help: String, unit: String? = nil, _ value: Double) -> MetricFamily {
        MetricFamily(name, .counter, help: help, unit: unit, samples: [Sample(value)])
    }

    /// Which of `states` holds, as a gauge labelled `label`: 1 for `current`, 0 for the others.
    /// (Not an OpenMetrics stateset, whose label must carry the family's own name: a `state`
    /// label is what dashboards and the contract use.)
    public static func state(_ name: String, help: String, label: String = "state", states: [String], current: String?) -> MetricFamily {
        MetricFamily(
            name, .gauge, help: help,
            samples: states.map { Sample($0 == current ? 1 : 0, labels: [(label, $0)]) })
    }
}
