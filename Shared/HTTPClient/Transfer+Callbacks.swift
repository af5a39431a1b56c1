/// The bodies of curl's header and write callbacks, on the transfer's pool thread.
/// Each returns false to make curl abort the transfer (after setting `failure`).
extension Transfer {
    /// One header line, CRLF included: a status line starts a new response (after a 1xx or
    /// a redirect hop), a blank line ends the header block.
    ///
    /// Read as bytes (HTTP header syntax is ASCII): trimming `String`s by `Character` cost a
    /// grapheme walk per header of every small file.
    func receiveHeaderLine(_ raw: UnsafeRawBufferPointer) -> Bool {
        let line = raw.trimmingASCIIWhitespace()
        if line.isEmpty { return headersComplete() }
        if line.starts(with: "HTTP/".utf8) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            status = fields.count > 1 ? Int(String(decoding: fields[1], as: UTF8.self)) ?? 0 : 0
            headers = [:]
            return true
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return true }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let value = String(decoding: line[(colon + 1)...].trimmingASCIIWhitespace(), as: UTF8.self)
        if let existing = headers[name] {
            headers[name] = existing + ", " + value
        } else {
            headers[name] = value
        }
        return true
    }

    /// A header block ended. For a download's 200 or 206 this opens the file.
    private func headersComplete() -> Bool {
        guard case .file(let path, let offset, _, _) = destination, status == 200 || status == 206 else {
            return true
        }
        do {
            if status == 206 {
                let range = headers["content-range"].flatMap(ContentRange.init)
                let start = range?.start ?? 0
                guard start == offset else {
                    throw HTTPClientError(
                        code: .unexpectedContentRange,
                        message: "asked for bytes from \(offset), got \(headers["content-range"] ?? "no Content-Range")")
                }
                expectedSize = range?.completeLength
                file = try DownloadFile.resuming(path, at: offset)
                file?.writebackBytes = writebackBytes
                let remaining = expectedSize.map { $0 - offset } ?? headers["content-length"].flatMap { Int64($0) }
                file?.stageForDisk(expectedBytes: remaining, largeThreshold: directBytes)
                observer?.bodyBegins(atOffset: offset)
            } else {
                expectedSize = headers["content-length"].flatMap { Int64($0) }
                file = try DownloadFile.truncating(path)
                file?.writebackBytes = writebackBytes
                file?.stageForDisk(expectedBytes: expectedSize, largeThreshold: directBytes)
                observer?.bodyBegins(atOffset: 0)
            }
            return true
        } catch {
            failure = error as? HTTPClientError ?? HTTPClientError(code: .fileError, message: "\(error)")
            return false
        }
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        TransferTotals.add(received: bytes.count)
        if let file {
            do {
                try file.write(bytes)
            } catch {
                failure = error
                return false
            }
            observer?.bodyWritten(bytes)
            if case .file(_, _, _, let progress) = destination, !progress(file.fileSize, expectedSize) {
                failure = HTTPClientError(code: .cancelled, message: "download stopped by its progress callback")
                return false
            }
            // The shared rate: wait here, on this transfer's thread, until it allows these bytes.
            receiveRate?.take(bytes.count, cancelled: { cancellation.isCancelled })
            return true
        }
        switch destination {
        case .memory(let limit):
            guard body.count + bytes.count <= limit else {
                failure = HTTPClientError(code: .responseTooLarge, message: "response body exceeds \(limit) bytes")
                return false
            }
            body.append(contentsOf: bytes)
        case .file(_, _, let limit, _):
            body.append(contentsOf: bytes.prefix(max(0, limit - body.count)))
        }
        return true
    }
}

/// `Content-Range: bytes 100-999/1000` (the complete length may be `*`).
struct ContentRange {
    var start: Int64
    var completeLength: Int64?

    init?(_ header: String) {
        guard header.hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard let rangePart = parts.first, let dash = rangePart.firstIndex(of: "-"),
            let start = Int64(rangePart[..<dash])
        else { return nil }
        self.start = start
        completeLength = parts.count == 2 ? Int64(parts[1]) : nil
    }
}

extension BidirectionalCollection where Element == UInt8 {
    /// Without leading and trailing spaces, tabs, CR and LF.
    func trimmingASCIIWhitespace() -> SubSequence {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        var end = endIndex
        while end > first, isSpace(self[index(before: end)]) { end = index(before: end) }
        return self[first..<end]
    }
}
