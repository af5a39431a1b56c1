import Foundation

/// The file system a benchmark writes its outputs to, named in its report: the same code is
/// faster or slower on another file system, and one kind skews the station run.
///
/// An ext4 without a journal does not reuse an inode freed in the last 60 s (360 s while its
/// inode-table block is dirty): each file created after thousands were deleted scans past every
/// one of them, and in a profile of the station run that scan was 45% of the downloader's CPU,
/// in whichever peer ran after a deletion. A device's data partition has a journal; pass such a
/// file system as `TMPDIR` to measure there.
struct ScratchDisk {
    var type: String
    var device: String
    /// For ext4: whether it has a journal (nil when /sys does not say).
    var journal: Bool?

    /// The mount holding `path` (the longest mount point above it in /proc/self/mountinfo).
    static func describe(path: String) -> ScratchDisk {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        var best: (point: String, numbers: String, type: String)?
        for line in table.split(separator: "\n") {
            // id parent major:minor root mount-point options [optional…] - type source super-options
            let halves = line.components(separatedBy: " - ")
            let fields = halves[0].split(separator: " ").map(String.init)
            guard halves.count == 2, fields.count >= 5, let type = halves[1].split(separator: " ").first else { continue }
            let point = fields[4]
            let covers = real == point || point == "/" || real.hasPrefix(point + "/")
            if covers, point.count >= (best?.point.count ?? -1) { best = (point, fields[2], String(type)) }
        }
        guard let best else { return ScratchDisk(type: "unknown", device: "unknown") }
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/sys/dev/block/\(best.numbers)")) ?? ""
        let device = link.isEmpty ? best.numbers : URL(fileURLWithPath: link).lastPathComponent
        var journal: Bool?
        if best.type == "ext4", let task = try? String(contentsOfFile: "/sys/fs/ext4/\(device)/journal_task", encoding: .utf8) {
            journal = task.trimmingCharacters(in: .whitespacesAndNewlines) != "<none>"
        }
        return ScratchDisk(type: best.type, device: device, journal: journal)
    }

    /// One line for the report's header.
    var line: String {
        var text = "disk:    \(type) on \(device)"
        switch journal {
        case true?: text += ", with a journal"
        case false?: text += ", WITHOUT a journal: station runs after many deletions skew (see the notes); set TMPDIR to a journaled file system"
        case nil: break
        }
        return text
    }
}
