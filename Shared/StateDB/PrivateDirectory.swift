import Glibc

/// Creates the folders Cassette keeps its data in (the state dir, the HTTP cache, a runtime dir)
/// with an exact mode, 0750 unless told otherwise, whatever the process's umask: a folder a
/// service creates is never open to other users, even when it was started with umask 000.
/// Folders that already exist are left as they are (their owner chose their mode).
public enum PrivateDirectory {
    public static let mode: mode_t = 0o750

    /// Creates `path` and each missing parent, each with `mode` and, when given, `group`.
    /// - Returns: the folders it created, outermost first.
    @discardableResult
    public static func create(_ path: String, mode: mode_t = mode, group: gid_t? = nil) throws(DirectoryError) -> [String] {
        var created: [String] = []
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, mode) == 0 {
                // mkdir applied the umask (never wider than `mode`); set the exact mode now.
                if let group, chown(prefix, uid_t.max, group) != 0 {
                    throw DirectoryError(path: prefix, errno: errno, action: "give group \(group) to")
                }
                guard chmod(prefix, mode) == 0 else { throw DirectoryError(path: prefix, errno: errno, action: "set the mode of") }
                created.append(prefix)
                continue
            }
            let failure = errno
            var info = stat()
            guard failure == EEXIST || failure == EACCES || failure == EROFS, stat(prefix, &info) == 0 else {
                throw DirectoryError(path: prefix, errno: failure, action: "create")
            }
            guard info.st_mode & S_IFMT == S_IFDIR else { throw DirectoryError(path: prefix, errno: ENOTDIR, action: "create") }
        }
        return created
    }
}

/// A folder that could not be created or given its mode.
public struct DirectoryError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    let action: String

    init(path: String, errno: Int32, action: String) {
        self.path = path
        self.errno = errno
        self.action = action
    }

    public var description: String { "Cannot \(action) \(path): \(String(cString: strerror(errno)))" }
}
