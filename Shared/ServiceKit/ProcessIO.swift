import Foundation

/// What this process made the kernel write to storage, from `/proc/self/io`: `write_bytes`
/// (bytes sent to the block layer on its account, whatever the file: media, the catalog and
/// its WAL, the metrics file) less `cancelled_write_bytes` (dirty pages dropped before they
/// were written, as when a file is truncated or deleted). Unlike counting in each writer, this
/// sees every path, SQLite's included. 0 where the kernel keeps no such accounting.
enum ProcessIO {
    static func bytesWritten() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
        var written = 0.0, cancelled = 0.0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let value = Double(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
            switch parts[0] {
            case "write_bytes": written = value
            case "cancelled_write_bytes": cancelled = value
            default: break
            }
        }
        return max(0, written - cancelled)
    }
}
