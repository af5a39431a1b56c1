import ArgumentParser
import Foundation

/// Runs `measure` in a new temporary folder with every child process stopped afterwards. The
/// folder is removed unless `keep` is set or the measurement failed (its logs are in it), and
/// also when the bench is interrupted. A loop image a bench mounted in it is unmounted and
/// deleted in every case (`LoopDisk`). A failure is printed and exits 1.
func inTempRoot(prefix: String, keep: Bool, _ measure: (String) async throws -> Void) async throws {
    let root = try makeTempRoot(prefix: prefix)
    ChildProcesses.shared.installSignalHandlers {
        LoopDisk.unmountAll()
        if !keep { try? FileManager.default.removeItem(atPath: root) }
    }
    var failed = false
    defer {
        ChildProcesses.shared.stopAll()
        LoopDisk.unmountAll()
        if keep || failed { progress("temporary folder kept: \(root)") } else { try? FileManager.default.removeItem(atPath: root) }
    }
    do {
        try await measure(root)
    } catch {
        failed = true
        progress("error: \(error) (logs in \(root))")
        throw ExitCode(1)
    }
}
