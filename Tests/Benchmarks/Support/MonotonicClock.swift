#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// CLOCK_MONOTONIC in nanoseconds: one cheap call per sample, no allocation.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A point in time `seconds` from now, for bounded waits.
func deadline(after seconds: Double) -> UInt64 {
    monotonicNanos() + UInt64(seconds * 1e9)
}

func sleepMicros(_ micros: UInt32) { usleep(micros) }
