import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One client connection: reads requests one after another (HTTP/1.1 keep-alive), applies
/// the next queued fault for each, asks the `Origin` for the answer and writes it.
///
/// Responses are written with `writeAndFlush` and each write is awaited, so a body that is
/// cut short (`truncateAfter`) has really left the process before the socket is closed, and
/// a large file is streamed with natural back-pressure instead of being queued whole.
struct HTTPConnection {
    let channel: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>
    let origin: Origin

    private enum Incoming {
        case request(OriginRequest)
        case tooLarge(HTTPRequestHead)
    }

    /// Serves requests until the client closes, a fault drops the connection or the task is
    /// cancelled; cancellation closes the channel at once, so even a write stalled on a
    /// client that stopped reading ends (`HTTPServer` cancels on shutdown).
    func serve() async {
        await withTaskCancellationHandler {
            await serveRequests()
        } onCancel: { [channel] in
            channel.channel.close(promise: nil)
        }
    }

    private func serveRequests() async {
        do {
            try await channel.executeThenClose { inbound, _ in
                var iterator = inbound.makeAsyncIterator()
                while let incoming = try await readRequest(&iterator) {
                    switch incoming {
                    case .tooLarge(let head):
                        let request = OriginRequest(head: head, body: [])
                        let response = origin.error(
                            .payloadTooLarge, subStatus: 4130,
                            "Request bodies are limited to \(OriginLimits.maxRequestBodyBytes) bytes.",
                            path: request.path)
                        _ = try await write(response, for: request, fault: nil, forceClose: true)
                        return
                    case .request(let request):
                        guard try await handle(request) else { return }
                    }
                }
            }
        } catch {
            // A client that goes away mid-response is routine for a test origin; nothing to do.
        }
    }

    /// Collects one request. Returns `nil` when the client closed the connection.
    private func readRequest(_ iterator: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator)
        async throws -> Incoming?
    {
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        while let part = try await iterator.next() {
            switch part {
            case .head(let next):
                head = next
                body = []
                if let declared = next.headers.first(name: "content-length").flatMap(Int.init),
                    declared > OriginLimits.maxRequestBodyBytes
                {
                    return .tooLarge(next)
                }
                // libcurl waits a second for "100 Continue" before sending larger bodies.
                if next.headers.first(name: "expect")?.lowercased() == "100-continue" {
                    let interim = HTTPResponseHead(version: next.version, status: .continue)
                    try await send(.head(interim))
                }
            case .body(var buffer):
                guard let current = head else { continue }
                if body.count + buffer.readableBytes > OriginLimits.maxRequestBodyBytes {
                    return .tooLarge(current)
                }
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                guard let current = head else { continue }
                return .request(OriginRequest(head: current, body: body))
            }
        }
        return nil
    }

    /// Answers one request; returns whether the connection stays open for the next.
    private func handle(_ request: OriginRequest) async throws -> Bool {
        let isControl = request.path.hasPrefix("/_control/")
        var fault: Fault?
        if !isControl {
            origin.stats.countRequest(path: request.path, method: request.method.rawValue)
            // A refused `HEAD` is answered before any queued fault, which stays for the `GET`s.
            if let status = origin.faults.headRefusal(method: request.method.rawValue, path: request.path) {
                let refusal = origin.error(
                    HTTPResponseStatus(statusCode: status), subStatus: 0,
                    "HEAD is not allowed here; this URL is valid for GET only.", path: request.path)
                return try await write(refusal, for: request, fault: nil, forceClose: false)
            }
            fault = origin.faults.pop(for: request.path)
        }
        if let delay = fault?.delayMs, delay > 0 {
            try await Task.sleep(nanoseconds: UInt64(min(delay, OriginLimits.maxFaultDelayMs)) * 1_000_000)
        }
        if fault?.reset == true {
            await abort()
            return false
        }
        var response: OriginResponse
        if let fault, var body = fault.body?.objectValue {
            body["serverTime"] = .string(origin.serverTime)
            response = OriginResponse.json(HTTPResponseStatus(statusCode: fault.status ?? 200), .object(body))
        } else if let fault, let status = fault.status {
            response = origin.error(
                HTTPResponseStatus(statusCode: status), subStatus: fault.subStatus ?? 0,
                fault.userMessage ?? "Injected fault.", path: request.path)
        } else {
            response = await origin.respond(to: request, ignoreRange: fault?.ignoreRange ?? false)
        }
        if fault?.commitThenReset == true {
            await abort()
            return false
        }
        if let retryAfter = fault?.retryAfter {
            response.headers.replaceOrAdd(name: "Retry-After", value: String(retryAfter))
        }
        return try await write(response, for: request, fault: fault, forceClose: false)
    }

    /// Writes head and body, applying `bytesPerSecond`, `truncateAfter` and `stallAfter`;
    /// returns whether the connection may be reused.
    private func write(_ response: OriginResponse, for request: OriginRequest, fault: Fault?, forceClose: Bool)
        async throws -> Bool
    {
        let length = response.body.length
        let hasBody = request.method != .HEAD && response.status.mayHaveResponseBody
        // A stall within the body (or right after the head) sends that much, then goes silent.
        let stallAt = fault?.stallAfter.flatMap { hasBody && $0 < length ? $0 : nil }
        let sendLimit = min(length, max(0, fault?.truncateAfter ?? Int.max), stallAt ?? Int.max)
        let keepAlive = request.keepAlive && !forceClose && sendLimit == length
        var headers = response.headers
        headers.replaceOrAdd(name: "Date", value: ServerClock.httpDate(origin.clock.now()))
        headers.replaceOrAdd(name: "Server", value: "cassette-origin")
        headers.replaceOrAdd(name: "Content-Length", value: String(length))
        headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let isFile = request.path.hasPrefix("/media/") || request.path.hasPrefix("/img/")
        try await send(.head(HTTPResponseHead(version: request.version, status: response.status, headers: headers)))
        if isFile && response.status == .partialContent && request.method == .GET {
            origin.stats.countRangeAnswer(path: request.path)
        }
        if !hasBody {
            try await send(.end(nil))
            return keepAlive
        }
        let throttle = fault?.bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        if case .file(let path, let offset, let fileLength) = response.body, throttle == nil, sendLimit == length {
            try await sendFile(path, offset: offset, length: fileLength)
            try await send(.end(nil))
            if isFile && response.status == .ok { origin.stats.countFullBody(path: request.path) }
            return keepAlive
        }
        var sent = 0
        try await BodyReader.chunks(of: response.body, limit: sendLimit) { chunk in
            for slice in Self.slices(of: chunk, bytesPerSecond: throttle) {
                try await send(.body(.byteBuffer(ByteBuffer(bytes: slice))))
                sent += slice.count
                if let throttle {
                    try await Task.sleep(nanoseconds: UInt64(Double(slice.count) / Double(throttle) * 1e9))
                }
            }
        }
        if let stallAt, sent == stallAt {
            await holdSilent()
            return false
        }
        guard sent == length else { return false }
        try await send(.end(nil))
        if isFile && response.status == .ok { origin.stats.countFullBody(path: request.path) }
        return keepAlive
    }

    private static func slices(of chunk: [UInt8], bytesPerSecond: Int?) -> [ArraySlice<UInt8>] {
        guard let rate = bytesPerSecond else { return [chunk[...]] }
        let size = max(1, rate / OriginLimits.throttleSlicesPerSecond)
        return stride(from: 0, to: chunk.count, by: size).map { chunk[$0..<min(chunk.count, $0 + size)] }
    }

    /// A whole file (or range) with no fault shaping it goes out as a `FileRegion`: NIO writes
    /// it with sendfile(2), from the page cache to the socket, as an edge server does. The open
    /// runs on NIO's blocking pool; the write's future completes once the kernel took every byte,
    /// so the descriptor is closed after it.
    /// A file that shrank since the answer was chosen is cut short like any short body: the
    /// connection closes (sendfile would wait forever for bytes past its end).
    private func sendFile(_ path: String, offset: Int, length: Int) async throws {
        let handle = try await NIOThreadPool.singleton.runIfActive {
            let handle = try NIOFileHandle(_deprecatedPath: path)
            var info = stat()
            let size = try handle.withUnsafeFileDescriptor { fstat($0, &info) == 0 ? Int(info.st_size) : -1 }
            guard size >= offset + length else {
                try? handle.close()
                throw ShortFile()
            }
            return handle
        }
        defer { try? handle.close() }
        try await send(.body(.fileRegion(FileRegion(fileHandle: handle, readerIndex: offset, endIndex: offset + length))))
    }

    private struct ShortFile: Error {}

    /// Sends nothing until the client closes the connection (or the server stops); after
    /// `OriginLimits.maxFaultDelayMs` it is closed here.
    private func holdSilent() async {
        let channel = channel.channel
        let limit = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(OriginLimits.maxFaultDelayMs))) {
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        limit.cancel()
    }

    private func send(_ part: HTTPServerResponsePart) async throws {
        try await channel.channel.writeAndFlush(part).get()
    }

    /// Makes the coming close a TCP reset (SO_LINGER 0), as a crashing server or a dropped
    /// link would look to the client, rather than an orderly FIN.
    private func abort() async {
        if let provider = channel.channel as? SocketOptionProvider {
            _ = try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
    }
}

/// Reads a response body in bounded chunks: bytes in memory are sliced, files are read from
/// disk a chunk at a time so a large media file never sits in memory whole.
enum BodyReader {
    static func chunks(of body: ResponseBody, limit: Int, _ consume: ([UInt8]) async throws -> Void) async throws {
        switch body {
        case .bytes(let bytes):
            var offset = 0
            while offset < min(limit, bytes.count) {
                let end = min(min(limit, bytes.count), offset + OriginLimits.fileChunkBytes)
                try await consume(Array(bytes[offset..<end]))
                offset = end
            }
        case .file(let path, let start, let length):
            guard let handle = FileHandle(forReadingAtPath: path) else { return }
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(start))
            var remaining = min(limit, length)
            while remaining > 0 {
                guard let data = try handle.read(upToCount: min(remaining, OriginLimits.fileChunkBytes)), !data.isEmpty
                else { return }
                remaining -= data.count
                try await consume(Array(data))
            }
        }
    }
}
