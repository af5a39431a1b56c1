import Glibc

/// What this process made the kernel write to storage, from `/proc/self/io`: `write_bytes`
/// (bytes sent to the block layer on its account, whatever the file: media, the catalog and
/// its WAL, the metrics file) less `cancelled_write_bytes` (dirty pages dropped before they
/// were written, as when a file is truncated or deleted). Unlike counting in each writer, this
/// sees every path, SQLite's included. 0 where the kernel keeps no such accounting.
///
/// Read with open(2)/read(2) and parsed by hand: a few hundred bytes of ASCII, no Foundation
/// string machinery (which may bring in ICU) needed.
enum ProcessIO {
    static func bytesWritten() -> Double {
        let fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return 0 }
        let fields = parse(buffer[..<n])
        return Double(max(0, (fields["write_bytes"] ?? 0) - (fields["cancelled_write_bytes"] ?? 0)))
    }

    /// `name: number` lines.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [String: Int64] {
        var fields: [String: Int64] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var value: Int64 = 0
            for byte in line[(colon + 1)...] where byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                value = value &* 10 &+ Int64(byte - UInt8(ascii: "0"))
            }
            fields[String(decoding: line[..<colon], as: UTF8.self)] = value
        }
        return fields
    }
}
