import Foundation
import Glibc

/// Measures a folder's total size every few milliseconds on a thread of its own and keeps the peak.
final class MediaSampler: @unchecked Sendable {
    struct Peak {
        var bytes = 0
        var allocated = 0
        var samples = 0
    }

    private let lock = NSLock()
    private var peak = Peak()
    private var running = true
    private let thread: Thread

    init(_ folder: String, intervalMicros: UInt32 = 5_000) {
        let box = Box()
        thread = Thread {
            while let sampler = box.sampler, sampler.isRunning {
                sampler.add(Self.measure(folder))
                usleep(intervalMicros)
            }
        }
        box.sampler = self
        thread.start()
    }

    private final class Box: @unchecked Sendable { weak var sampler: MediaSampler? }

    private var isRunning: Bool { lock.withLock { running } }

    private func add(_ sample: (bytes: Int, allocated: Int)) {
        lock.withLock {
            peak.bytes = max(peak.bytes, sample.bytes)
            peak.allocated = max(peak.allocated, sample.allocated)
            peak.samples += 1
        }
    }

    /// Stops sampling and returns the peak.
    func stop() -> Peak {
        lock.withLock { running = false }
        while thread.isExecuting { usleep(1_000) }
        return lock.withLock { peak }
    }

    /// Sum of the regular files' sizes under `folder`, and of the blocks they occupy.
    static func measure(_ folder: String) -> (bytes: Int, allocated: Int) {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return (0, 0) }
        var bytes = 0, allocated = 0
        while let relative = walker.nextObject() as? String {
            var info = stat()
            guard lstat(folder + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            bytes += Int(info.st_size)
            allocated += Int(info.st_blocks) * 512
        }
        return (bytes, allocated)
    }
}
