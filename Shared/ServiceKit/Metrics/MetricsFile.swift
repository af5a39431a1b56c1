import Foundation
import Glibc

/// Rewrites the metrics file atomically for node_exporter's textfile collector, which must
/// never read half a file: the text goes to `<file>.tmp` beside it, which is then renamed over
/// it (rename(2) replaces in one step). Not fsynced: after a power cut the file may be missing
/// or empty, and the next interval writes it again; syncing every interval would only add
/// flash writes (textfile directories are often on tmpfs anyway). Readable by all (0644):
/// metrics are not secret, and node_exporter runs as its own user.
enum MetricsFile {
    static func write(_ text: String, to path: String) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw MetricsFileError(path: temporary, what: "open", errno: errno) }
        var failure: MetricsFileError?
        _ = fchmod(fd, 0o644)
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = MetricsFileError(path: temporary, what: "write", errno: errno)
                break
            }
            offset += n
        }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 {
            failure = MetricsFileError(path: path, what: "rename", errno: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }
}

struct MetricsFileError: Error, CustomStringConvertible {
    let path: String
    let what: String
    let errno: Int32
    var description: String { "\(what) \(path): \(String(cString: strerror(errno)))" }
}
