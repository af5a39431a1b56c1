import Foundation

/// One line of a bench's goal summary: a figure, Cassette's value, the peer's or floor's, their
/// ratio, the goal and whether it is met. Shared by the benches so every goal reads the same.
struct GoalRow: Codable, Sendable {
    enum Direction: String, Codable, Sendable {
        /// The ratio must be at most the goal (times, CPU, memory).
        case atMost
        /// The ratio must be at least the goal (throughput).
        case atLeast
    }

    var figure: String
    var cassette: String
    var peer: String
    /// nil when a side is missing, or when the goal is an absolute bound (see `absolute`).
    var ratio: Double?
    /// nil: a figure reported beside the goals, with none of its own.
    var goal: Double?
    var direction: Direction
    /// True when `goal` bounds Cassette's value itself rather than a ratio (a size, say).
    var absolute = false
    /// The value `goal` is compared with when `absolute`.
    var value: Double?

    /// A goal on the ratio of two measured values; `goal` nil: a ratio reported beside the goals
    /// (a floor, another peer).
    init(_ figure: String, cassette: Double?, peer: Double?, unit: String, goal: Double?, _ direction: Direction, digits: Int = 1) {
        self.figure = figure
        self.cassette = cassette.map { Self.format($0, digits) + unit } ?? "—"
        self.peer = peer.map { Self.format($0, digits) + unit } ?? "—"
        if let cassette, let peer, peer > 0 { ratio = cassette / peer }
        self.goal = goal
        self.direction = direction
    }

    /// A goal on one value (`peer` says what it is set against).
    init(_ figure: String, value: Double?, shown: String, peer: String, goal: Double, _ direction: Direction) {
        self.figure = figure
        self.cassette = value == nil ? "—" : shown
        self.peer = peer
        self.goal = goal
        self.direction = direction
        self.absolute = true
        self.value = value
    }

    /// A figure shown beside the goals without a goal of its own.
    init(reported figure: String, cassette: String, peer: String) {
        self.figure = figure
        self.cassette = cassette
        self.peer = peer
        self.direction = .atMost
    }

    var met: Bool? {
        guard let goal, let compared = absolute ? value : ratio else { return nil }
        return direction == .atMost ? compared <= goal : compared >= goal
    }

    var goalText: String {
        guard let goal else { return "(reported)" }
        let sign = direction == .atMost ? "≤" : "≥"
        return absolute ? "\(sign) \(Self.format(goal, 0))" : "\(sign) \(Self.format(goal, 2))×"
    }

    /// The rows as a table: figure | cassette | peer/floor | ratio | goal | met.
    static func table(_ rows: [GoalRow], peerTitle: String = "peer / floor") -> String {
        let header = ["figure", "cassette", peerTitle, "ratio", "goal", "met"]
        let cells = rows.map { row in
            [
                row.figure, row.cassette, row.peer, row.ratio.map { String(format: "%.2f×", $0) } ?? "—", row.goalText,
                row.met.map { $0 ? "met" : "not met" } ?? "—",
            ]
        }
        var widths = header.map(\.count)
        for line in cells { for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func render(_ line: [String]) -> String {
            line.enumerated().map { i, cell in
                let padding = String(repeating: " ", count: max(0, widths[i] - cell.count))
                return i == 0 || i == line.count - 1 ? cell + padding : padding + cell
            }.joined(separator: " | ")
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-")
        return ([render(header), rule] + cells.map(render)).joined(separator: "\n")
    }

    private static func format(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
