import HTTPRanges
import NIOHTTP1

extension Origin {
    /// `GET|HEAD /media/…` and `/img/…`: only files listed in the catalog are served, so a
    /// crafted path (`..`, symlinks) can never reach anything else on disk.
    func serveFile(_ request: OriginRequest, ignoreRange: Bool) -> OriginResponse {
        let relative = String(request.path.dropFirst())
        guard let file = index.filesByPath[relative] else { return notFound("File", request) }
        let path = dataDirectory.appendingPathComponent(file.path).path
        return serveBytes(
            request, body: .file(path: path, offset: 0, length: file.sizeBytes), size: file.sizeBytes,
            etag: file.sha256, mimeType: file.mimeType, ignoreRange: ignoreRange, cacheable: true)
    }

    /// The byte-serving rules shared by files and keys: ETag / If-None-Match → 304, a single
    /// `Range` → 206 with Content-Range (416 when it lies past the end), anything else → 200.
    /// Multi-range and malformed `Range` headers are answered with the whole body, which
    /// RFC 9110 allows and which clients must cope with anyway.
    func serveBytes(
        _ request: OriginRequest, body: ResponseBody, size: Int, etag hash: String, mimeType: String,
        ignoreRange: Bool, cacheable: Bool
    ) -> OriginResponse {
        let etag = "\"\(hash.prefix(32))\""
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: etag)
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Cache-Control", value: cacheable ? "public, max-age=86400" : "private, no-store")
        if let ifNoneMatch = request.headers.first(name: "if-none-match") {
            let tags = ifNoneMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if tags.contains(where: { $0 == "*" || $0 == etag || $0 == "W/" + etag }) {
                return OriginResponse(status: .notModified, headers: headers)
            }
        }
        headers.add(name: "Content-Type", value: mimeType)
        if !ignoreRange, let rangeHeader = request.headers.first(name: "range") {
            switch ByteRangeRequest.parse(rangeHeader, size: Int64(size)) {
            case .range(let offset, let length):
                let range = Int(offset)..<Int(offset + length)
                headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)")
                return OriginResponse(
                    status: .partialContent, headers: headers,
                    body: body.slice(range))
            case .unsatisfiable:
                headers.remove(name: "Content-Type")
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Content-Range", value: "bytes */\(size)")
                let error = self.error(
                    .rangeNotSatisfiable, subStatus: 4160, "Range lies outside the \(size) bytes.",
                    path: request.path)
                return OriginResponse(status: .rangeNotSatisfiable, headers: headers, body: error.body)
            case .whole:
                break
            }
        }
        return OriginResponse(status: .ok, headers: headers, body: body)
    }
}

extension ResponseBody {
    /// The part of this body covered by `range` (offsets into the body).
    func slice(_ range: Range<Int>) -> ResponseBody {
        switch self {
        case .bytes(let bytes): .bytes(Array(bytes[range]))
        case .file(let path, let offset, _): .file(path: path, offset: offset + range.lowerBound, length: range.count)
        }
    }
}
