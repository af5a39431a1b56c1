import BlockingIO
import Foundation
import Glibc
import OriginClient

/// The media directory (`<state-dir>/media`) and every file operation on it. The catalog only
/// ever holds paths relative to this root (docs/catalog.md); `absolute` is the one place a
/// relative path becomes a real one, and it refuses anything that could leave the root.
struct MediaFolder: Sendable {
    let root: String
    static let partSuffix = ".part"
    /// Where station tracks and progressive products live; created by `prepare`, never removed.
    static let tracksFolder = "tracks"

    init(stateDirectory: String) {
        root = stateDirectory + "/media"
    }

    func prepare() throws {
        try FileManager.default.createDirectory(atPath: root + "/" + Self.tracksFolder, withIntermediateDirectories: true)
        // Explicit modes: the daemon's umask (0117 while it binds its socket) would otherwise
        // leave the folders without the search bit, and the player could not reach the files.
        for directory in [root, root + "/" + Self.tracksFolder] { chmod(directory, 0o750) }
    }

    /// `tracks/<id>.<ext>`: the id is a checked origin id and the extension comes from the
    /// URL's last path component when it is a short plain word, else from the MIME type.
    static func relativePath(itemId: String, urlPath: String, mimeType: String?) -> String {
        "\(tracksFolder)/\(itemId).\(fileExtension(urlPath: urlPath, mimeType: mimeType))"
    }

    static func fileExtension(urlPath: String, mimeType: String?) -> String {
        let last = urlPath.split(separator: "/").last.map(String.init) ?? ""
        if let dot = last.lastIndex(of: ".") {
            let ext = last[last.index(after: dot)...].lowercased()
            if (1...5).contains(ext.count), ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) { return ext }
        }
        switch mimeType?.lowercased() {
        case "audio/flac", "audio/x-flac": return "flac"
        case "audio/mpeg": return "mp3"
        case "audio/mp4", "audio/aac": return "m4a"
        case "audio/ogg", "audio/opus": return "opus"
        default: return "bin"
        }
    }

    /// The real path of a catalog path. Throws unless every component is a plain token, so
    /// `..`, absolute paths and odd bytes from a corrupted catalog never reach the file system.
    func absolute(_ relative: String) throws -> String {
        guard Self.isPlainRelative(relative) else {
            throw DownloaderError.storage("refusing the media path \(relative.debugDescription): not a plain relative path")
        }
        return root + "/" + relative
    }

    /// Every `/`-separated component is an `OriginID`, each checked where it lies in the string:
    /// admission and each transfer ask this for every file, and splitting into `String`s cost an
    /// allocation per component.
    static func isPlainRelative(_ relative: String) -> Bool {
        let bytes = relative.utf8
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
            guard OriginID.isValid(utf8: bytes[start..<end]) else { return false }
            guard end != bytes.endIndex else { return true }
            start = bytes.index(after: end)
        }
    }

    func partPath(_ relative: String) throws -> String { try absolute(relative) + Self.partSuffix }

    /// The size of a regular file, nil when absent (or not a regular file).
    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Removes the final file and its `.part`, whichever exist, and the folders below `hls/` or
    /// `images/` this leaves empty.
    func removeAll(_ relative: String) {
        guard let path = try? absolute(relative) else { return }
        unlink(path)
        unlink(path + Self.partSuffix)
        guard relative.hasPrefix("hls/") || relative.hasPrefix("images/") else { return }
        var folder = (relative as NSString).deletingLastPathComponent
        while folder.contains("/"), rmdir(root + "/" + folder) == 0 {
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    /// Creates the folders above `path` (inside the root) that do not exist yet, mode 0750.
    static func makeParentDirectories(of path: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        var info = stat()
        guard stat(parent, &info) != 0 else { return }
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
    }

    /// Every regular file under the root, relative to it (symlinks are listed, never followed).
    func listFiles() -> [String] {
        var found: [String] = []
        func walk(_ relative: String) {
            let dir = relative.isEmpty ? root : root + "/" + relative
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(root + "/" + child, &info) == 0 else { continue }
                if (info.st_mode & S_IFMT) == S_IFDIR { walk(child) } else { found.append(child) }
            }
        }
        walk("")
        return found
    }

    // MARK: Durable steps (temp name → verify → fsync → rename → dir fsync → catalog)

    /// Forces a file's data to disk. Before a rename: otherwise after a power cut the final
    /// name could point at a file whose blocks were never written.
    static func fsyncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DownloaderError.storage("cannot open \(path) to fsync: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw DownloaderError.storage("fsync \(path): \(String(cString: strerror(errno)))") }
    }

    /// Makes a rename (a directory entry) durable: without it a crash may bring the old name back.
    static func fsyncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw DownloaderError.storage("cannot open directory \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw DownloaderError.storage("fsync directory \(path): \(String(cString: strerror(errno)))") }
    }

    static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else {
            throw DownloaderError.storage("rename \(from) → \(to): \(String(cString: strerror(errno)))")
        }
    }
}

// MARK: From async code: the same operations, off the cooperative pool

extension MediaFolder {
    /// What the `.part` of a catalog path holds (0 when absent).
    func partSize(_ relative: String) async -> Int64 {
        guard let path = try? partPath(relative) else { return 0 }
        return await BlockingIO.run { Self.size(path) ?? 0 }
    }

    /// Removes the final files and `.part`s of these catalog paths.
    func delete(_ relatives: [String]) async {
        guard !relatives.isEmpty else { return }
        await BlockingIO.run { for relative in relatives { removeAll(relative) } }
    }

    func delete(_ relative: String) async { await delete([relative]) }
}
