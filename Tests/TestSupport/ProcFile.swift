import Foundation
import Glibc

/// The whole text of a file under /proc (`/proc/PID/maps`, `smaps`): such files report size 0,
/// so they are read with read(2) to the end rather than through Foundation.
public func readProcFile(_ path: String) throws -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}
