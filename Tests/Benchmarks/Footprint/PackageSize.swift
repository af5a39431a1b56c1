import Foundation

/// The size of Cassette installed: every regular file of the Debian package's tree (or of a
/// `make install DESTDIR=…` tree), and how much of it is `lib_FoundationICU.so`, the ICU code
/// and data Foundation loads.
struct PackageSize: Codable, Sendable {
    var source: String
    var totalBytes: Int
    var icuBytes: Int
    /// The Swift runtime's libraries (`lib/cassette/`), ICU included: what any binary built on
    /// Foundation ships before a line of its own code, the package's floor.
    var runtimeBytes: Int
    /// The largest files, for the report.
    var largest: [File]

    struct File: Codable, Sendable {
        var path: String
        var bytes: Int
    }

    static let icuLibrary = "lib_FoundationICU.so"

    /// Sizes `path`: a `.deb` is unpacked into `scratch` first (`dpkg-deb -x`), anything else
    /// is taken as an installed tree.
    static func measure(_ path: String, scratch: String) throws -> PackageSize {
        var tree = path
        if path.hasSuffix(".deb") {
            try? FileManager.default.removeItem(atPath: scratch)
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            let child = try ChildProcesses.shared.launch("/usr/bin/dpkg-deb", ["-x", path, scratch], logFile: scratch + ".log")
            guard ChildProcesses.shared.waitForExit(child, seconds: 120) else {
                ChildProcesses.shared.stop(child)
                throw BenchError("dpkg-deb -x \(path) did not finish")
            }
            tree = scratch
        }
        guard let walker = FileManager.default.enumerator(atPath: tree) else { throw BenchError("cannot read \(tree)") }
        var files: [File] = []
        for case let relative as String in walker {
            var info = stat()
            guard lstat(tree + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            files.append(File(path: relative, bytes: Int(info.st_size)))
        }
        guard !files.isEmpty else { throw BenchError("\(path) holds no files") }
        let icu = files.filter { $0.path.hasSuffix("/" + icuLibrary) }.reduce(0) { $0 + $1.bytes }
        let runtime = files.filter { $0.path.contains("lib/cassette/") }.reduce(0) { $0 + $1.bytes }
        return PackageSize(
            source: path, totalBytes: files.reduce(0) { $0 + $1.bytes }, icuBytes: icu, runtimeBytes: runtime,
            largest: Array(files.sorted { $0.bytes > $1.bytes }.prefix(8)))
    }

    var text: String {
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        var lines = [
            "installed package: \(mib(totalBytes)) in files (\(source)); the Swift runtime \(mib(runtimeBytes)), of it "
                + "\(Self.icuLibrary) \(mib(icuBytes)); largest files:"
        ]
        for file in largest { lines.append("  \(mib(file.bytes))  \(file.path)") }
        return lines.joined(separator: "\n")
    }
}
