/// Renders metric families as OpenMetrics text (the `application/openmetrics-text` 1.0.0
/// exposition), ending `# EOF`.
///
/// Written here rather than with swift-prometheus: its registry emits the older Prometheus text
/// format, with a counter's `# TYPE` line naming the sample (`# TYPE x_total counter`, which an
/// OpenMetrics parser rejects as a clashing name), no `# EOF`, and label values unescaped; and
/// its counters only count up from zero within the process, while ours carry totals across
/// restarts. What is needed here (a few gauges, counters and a stateset) is this file.
public enum OpenMetricsText {
    public static func render(_ families: [MetricFamily]) -> String {
        var out = ""
        out.reserveCapacity(families.count * 160)
        for family in families {
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            if let unit = family.unit { out += "# UNIT \(family.name) \(unit)\n" }
            out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            let sampleName = family.kind == .counter ? family.name + "_total" : family.name
            for sample in family.samples {
                out += sampleName
                if !sample.labels.isEmpty {
                    out += "{" + sample.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                out += " " + number(sample.value) + "\n"
            }
        }
        out += "# EOF\n"
        return out
    }

    /// Integers without a fraction; `+Inf`, `-Inf` and `NaN` as OpenMetrics spells them.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Label values and help texts escape the same three characters: backslash, double quote
    /// and line feed.
    static func escapeLabel(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ text: String) -> String { escapeLabel(text) }
}
