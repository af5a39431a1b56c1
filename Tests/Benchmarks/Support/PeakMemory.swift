import Foundation

/// Samples a process's memory on a thread of its own every `intervalMicros` while a load runs,
/// and keeps the sample with the highest RSS.
final class PeakMemory: @unchecked Sendable {
    private let pid: pid_t
    private let intervalMicros: UInt32
    private let lock = NSCondition()
    /// Guarded by `lock`.
    private var peak: ProcessMemory?
    private var stopped = false
    private var ended = false

    init(pid: pid_t, intervalMicros: UInt32 = 50_000) {
        self.pid = pid
        self.intervalMicros = intervalMicros
        let thread = Thread { [self] in run() }
        thread.name = "peak-memory"
        thread.start()
    }

    /// Stops sampling and returns the peak (one last sample included).
    func finish() throws -> ProcessMemory {
        lock.lock()
        stopped = true
        while !ended { lock.wait() }
        lock.unlock()
        let last = try ProcessMemory.read(pid: pid)
        guard let peak, peak.rssKiB >= last.rssKiB else { return last }
        return peak
    }

    private func run() {
        while true {
            let sample = try? ProcessMemory.read(pid: pid)
            lock.lock()
            if let sample, sample.rssKiB > peak?.rssKiB ?? -1 { peak = sample }
            if stopped {
                ended = true
                lock.broadcast()
                lock.unlock()
                return
            }
            lock.unlock()
            sleepMicros(intervalMicros)
        }
    }
}
