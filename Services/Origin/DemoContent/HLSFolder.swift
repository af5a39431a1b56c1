import Foundation

/// Measures of a presentation ffmpeg wrote, for its master playlist and catalog entry.
enum HLSFolder {
    /// `BANDWIDTH` of the variant in `folder`: its segments' bits over `seconds`, plus 10 %
    /// (RFC 8216 4.3.4.2 asks for the peak; segments of a constant-rate encode stay near the mean).
    static func bandwidth(of folder: URL, seconds: Double) throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasSuffix(".m3u8") }
        var bytes = 0
        for name in names {
            bytes += try size(of: folder.appendingPathComponent(name))
        }
        return Int(Double(bytes * 8) / max(seconds, 1) * 1.1)
    }

    /// Bytes of every regular file below `base`.
    static func bytes(below base: URL) throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: base.path).reduce(0) { total, sub in
            let attributes = try FileManager.default.attributesOfItem(atPath: base.appendingPathComponent(sub).path)
            let isFile = (attributes[.type] as? FileAttributeType) == .typeRegular
            return total + (isFile ? ((attributes[.size] as? NSNumber)?.intValue ?? 0) : 0)
        }
    }

    private static func size(of file: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }
}
