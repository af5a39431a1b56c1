import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Aligned memory for small bodies written with `O_DIRECT`, kept for reuse between downloads.
///
/// A body of up to 1 MiB is held whole in memory of its rounded-up size (`DownloadFile`'s
/// `.whole` staging). Fresh from `posix_memalign`, memory of that size comes from `mmap` or from
/// an arena top that glibc trims again when it is freed, so a small download could pay a page
/// fault per 4 KiB copied in (and the unmapping), on each of a station's thousand files.
/// Sizes are rounded up to powers of two from 64 KiB, and at most `maxPooledBytes` wait here;
/// beyond that a buffer is freed as before.
enum AlignedBuffers {
    static let alignment = 4096
    static let smallestClass = 64 << 10
    static let largestClass = 1 << 20
    /// What the pool may hold while no download uses it (about one buffer per parallel transfer
    /// of a station of small files).
    static let maxPooledBytes = 4 << 20

    /// Addresses by capacity (as integers: the state a `Mutex` guards must be `Sendable`).
    private struct Pool {
        var free: [Int: [UInt]] = [:]
        var pooledBytes = 0
    }
    private static let pool = Mutex(Pool())

    /// The capacity a buffer for `bytes` gets (at least `bytes`, a multiple of `alignment`).
    static func capacity(for bytes: Int) -> Int {
        guard bytes <= largestClass else { return (bytes + alignment - 1) / alignment * alignment }
        var size = smallestClass
        while size < bytes { size <<= 1 }
        return size
    }

    /// Memory of `capacity(for: bytes)` bytes aligned to `alignment`, and that capacity; nil when
    /// the allocation fails.
    static func take(atLeast bytes: Int) -> (memory: UnsafeMutableRawPointer, capacity: Int)? {
        let size = capacity(for: bytes)
        if let reused = pool.withLock({ pool -> UInt? in
            guard let address = pool.free[size]?.popLast() else { return nil }
            pool.pooledBytes -= size
            return address
        }), let memory = UnsafeMutableRawPointer(bitPattern: reused) {
            return (memory, size)
        }
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, alignment, size) == 0, let memory else { return nil }
        return (memory, size)
    }

    /// Hands back memory `take` gave, with the capacity it gave.
    static func giveBack(_ memory: UnsafeMutableRawPointer, capacity: Int) {
        let address = UInt(bitPattern: memory)
        let kept =
            capacity <= largestClass
            && pool.withLock { pool -> Bool in
                guard pool.pooledBytes + capacity <= maxPooledBytes else { return false }
                pool.free[capacity, default: []].append(address)
                pool.pooledBytes += capacity
                return true
            }
        if !kept { free(memory) }
    }
}
