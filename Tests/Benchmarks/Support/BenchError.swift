#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every failure the benchmark reports: what it was doing, in words.
struct BenchError: Error, CustomStringConvertible {
    var description: String

    init(_ message: String) { description = message }

    /// A failed system call, with `errno` spelled out.
    static func system(_ what: String, _ code: Int32 = errno) -> BenchError {
        BenchError("\(what): \(String(cString: strerror(code))) (errno \(code))")
    }
}

/// A new folder `<TMPDIR or /tmp>/<prefix>.XXXXXX`, kept short: the socket paths inside it must
/// stay under 108 bytes. `TMPDIR` puts a run on the file system it is to measure.
func makeTempRoot(prefix: String) throws -> String {
    let parent = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    let pattern = "\(parent.hasSuffix("/") ? String(parent.dropLast()) : parent)/\(prefix).XXXXXX"
    var template = Array(pattern.utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw BenchError.system("mkdtemp \(pattern)")
    }
    return String(cString: made)
}
