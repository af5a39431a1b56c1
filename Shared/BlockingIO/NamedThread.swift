import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a thread of its own for work that blocks for its whole life (audio output and
/// decoding, hashing, ordered writes and commits), under a name `top -H`, `ps -L`, `perf` and
/// /proc show.
///
/// Foundation's `Thread.name` does not reach the kernel on Linux: such a thread kept the name of
/// the pool thread that started it ("com.apple.root.default-qos", cut to 15 bytes), so an audio
/// thread could not be told from the cooperative pool. The thread names itself, through
/// /proc/thread-self/comm: `pthread_setname_np` and `prctl` are not visible to Swift (a GNU
/// extension; a variadic function).
public enum NamedThread {
    /// The bytes of a thread's name Linux keeps (16 with the terminating zero).
    public static let maxNameBytes = 15

    @discardableResult
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        precondition(
            name.utf8.count <= maxNameBytes && name.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7f },
            "a thread name of at most 15 ASCII characters")
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.name = name
        thread.start()
        return thread
    }

    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = Array(name.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
