import Foundation

/// SHA-256 of many files in one `sha256sum` run: path → hex digest.
func sha256(ofFiles paths: [String]) throws -> [String: String] {
    guard !paths.isEmpty else { return [:] }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = paths
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    var result: [String: String] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { continue }
        result[String(parts[1].drop { $0 == " " || $0 == "*" })] = String(parts[0])
    }
    return result
}
