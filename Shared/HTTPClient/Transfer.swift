import CCurl

/// Where a transfer's body goes.
enum BodyDestination: Sendable {
    /// Kept in memory; more than `limit` bytes fails the transfer with `ResponseTooLarge`.
    case memory(limit: Int)
    /// A 200 or 206 body goes into the file at `path`; any other status's body is kept in
    /// memory up to `errorBodyLimit` bytes and the rest dropped.
    case file(path: String, resumeFrom: Int64, errorBodyLimit: Int, progress: @Sendable (Int64, Int64?) -> Bool)
}

/// What one curl perform produced (one hop: redirects are followed by `HTTPClient`).
struct TransferOutcome: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    /// The absolute target of a 3xx `Location`, as curl resolved it.
    var redirectURL: String?
    /// Set when the body went into the file.
    var download: DownloadOutcome?
    /// The HTTP version the answer came over ("1.1", "2"), as curl negotiated it.
    var httpVersion: String? = nil
}

struct DownloadOutcome: Sendable {
    var resumed: Bool
    var bytesWritten: Int64
    var fileSize: Int64
    var expectedSize: Int64?
}

/// One request on one borrowed easy handle, run start to end on one pool thread.
/// Not Sendable: curl's callbacks reach it through `userdata` on that same thread.
final class Transfer {
    private let easy: CurlEasy
    let destination: BodyDestination
    let cancellation: CancellationFlag
    let observer: (any DownloadBodyObserver)?
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var file: DownloadFile?
    var expectedSize: Int64?
    /// Set by a callback that aborts the transfer; wins over curl's generic write/abort code.
    var failure: HTTPClientError?
    /// `Configuration.downloadWritebackBytes`, for the file once it is opened.
    var writebackBytes: Int64 = 0
    /// `Configuration.downloadDirectBytes`, likewise.
    var directBytes: Int64 = 0
    /// The rate a download shares with the others given it (`ReceiveRate`), nil: unlimited.
    let receiveRate: ReceiveRate?
    /// The `CURLOPT_MAX_RECV_SPEED_LARGE` set on the handle (0: none).
    private var appliedRecvSpeed: Int64 = 0

    private init(
        easy: CurlEasy, destination: BodyDestination, cancellation: CancellationFlag,
        observer: (any DownloadBodyObserver)?, receiveRate: ReceiveRate?
    ) {
        self.easy = easy
        self.destination = destination
        self.cancellation = cancellation
        self.observer = observer
        self.receiveRate = receiveRate
    }

    /// Runs `request` on `easy`, blocking the calling (pool) thread until it ends.
    /// The handle must be checked out by the caller, who gets it back unchanged in ownership.
    static func run(
        _ request: HTTPRequest, credentials: BasicCredentials?, configuration: HTTPClient.Configuration,
        easy: CurlEasy, destination: BodyDestination, cancellation: CancellationFlag,
        observer: (any DownloadBodyObserver)? = nil, receiveRate: ReceiveRate? = nil
    ) throws -> TransferOutcome {
        let transfer = Transfer(
            easy: easy, destination: destination, cancellation: cancellation, observer: observer,
            receiveRate: receiveRate)
        return try transfer.perform(request, credentials: credentials, configuration: configuration)
    }

    private func perform(
        _ request: HTTPRequest, credentials: BasicCredentials?,
        configuration: HTTPClient.Configuration
    ) throws -> TransferOutcome {
        try easy.reset()
        writebackBytes = Int64(max(0, configuration.downloadWritebackBytes))
        directBytes = Int64(max(0, configuration.downloadDirectBytes))
        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(headerList) }
        try configure(request, credentials: credentials, configuration: configuration, headerList: &headerList)

        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_HEADERDATA, pointer: me)
        try easy.set(CURLOPT_WRITEDATA, pointer: me)
        try easy.set(CURLOPT_XFERINFODATA, pointer: me)
        try easy.setDataCallback(CURLOPT_HEADERFUNCTION) { data, size, count, userdata in
            let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
            return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }
        try easy.setDataCallback(CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
            let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
            return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }
        try easy.setProgressCallback { userdata, _, _, _, _ in
            let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
            if transfer.cancellation.isCancelled { return 1 }
            transfer.followRateRise()
            return 0
        }

        let code = withExtendedLifetime(self) { easy.perform() }
        if let file {
            if code == CURLE_OK, failure == nil {
                observer?.bodyReceived()
                do {
                    // Bytes still on their way to the disk (a large body) land first.
                    try file.finishWrites()
                    file.startFinalWriteback()
                    observer?.bodyEnded(fileDescriptor: file.descriptor)
                } catch {
                    failure = error
                }
            }
            // Closing puts whatever was received into the file, so the size below is the file's.
            file.close()
        }
        let download = file.map {
            DownloadOutcome(
                resumed: status == 206, bytesWritten: $0.bytesWritten,
                fileSize: $0.fileSize, expectedSize: expectedSize)
        }
        file = nil

        if var failure {
            failure.bytesOnDisk = download?.fileSize
            throw failure
        }
        guard code == CURLE_OK else {
            var error = HTTPClientError(curl: code, message: easy.message(for: code))
            if code == CURLE_ABORTED_BY_CALLBACK { error = HTTPClientError(code: .cancelled, message: "task cancelled") }
            error.bytesOnDisk = download?.fileSize
            throw error
        }
        if status == 0 { status = easy.infoLong(CURLINFO_RESPONSE_CODE) ?? 0 }
        let redirectURL = (300..<400).contains(status) ? easy.infoString(CURLINFO_REDIRECT_URL) : nil
        return TransferOutcome(
            status: status, headers: headers, body: body, redirectURL: redirectURL, download: download,
            httpVersion: Self.versionName(easy.infoLong(CURLINFO_HTTP_VERSION)))
    }

    private func configure(
        _ request: HTTPRequest, credentials: BasicCredentials?, configuration: HTTPClient.Configuration,
        headerList: inout UnsafeMutablePointer<curl_slist>?
    ) throws {
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds(configuration.connectTimeoutSeconds))
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        try configureTransport(configuration.transport)

        var requestHeaders = request.headers
        switch destination {
        case .memory:
            try easy.set(CURLOPT_TIMEOUT_MS, milliseconds(request.timeoutSeconds))
        case .file(_, let offset, _, _):
            // A stall timeout: fail when less than 1 byte/s arrives for `timeoutSeconds`.
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.timeoutSeconds.rounded(.up))))
            // Bigger reads mean fewer write(2) calls and callbacks per megabyte on fast links;
            // under a rate limit, smaller ones keep each read within what the rate allows.
            let rate = receiveRate?.bytesPerSecond
            try easy.set(CURLOPT_BUFFERSIZE, ReceiveRate.bufferBytes(rate: rate, configured: configuration.downloadBufferBytes))
            if let rate {
                try easy.set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: rate)
                appliedRecvSpeed = rate
            }
            if offset > 0 {
                requestHeaders = requestHeaders.filter { $0.key.lowercased() != "range" }
                requestHeaders["Range"] = "bytes=\(offset)-"
            }
        }

        try configureMethod(request)

        if let credentials {
            try easy.set(CURLOPT_HTTPAUTH, cassette_curl_auth_basic())
            try easy.set(CURLOPT_USERNAME, credentials.token)
            try easy.set(CURLOPT_PASSWORD, credentials.secret)
        }

        // "Expect:" with no value stops curl from waiting for 100-continue before large bodies;
        // "Content-Type:" stops it from labelling a body as a form unless the caller said so.
        var lines = ["Expect:"]
        if request.body != nil && !requestHeaders.keys.contains(where: { $0.lowercased() == "content-type" }) {
            lines.append("Content-Type:")
        }
        for (name, value) in requestHeaders {
            // curl drops "Name:" (it means "remove"); "Name;" sends the header with an empty value.
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw HTTPClientError(code: .transferFailed, message: "curl_slist_append failed")
            }
            headerList = appended
        }
        try easy.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList))
    }

    /// HTTP/2 where the server offers it in the TLS handshake (ALPN), HTTP/1.1 otherwise and
    /// over plain http; then the trust, the pins and the proxy of `Transport`.
    private func configureTransport(_ transport: HTTPClient.Transport) throws {
        try easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        if let caFile = transport.caFile {
            // The bundle replaces the system's store: the CA directory would add its certificates back.
            try easy.set(CURLOPT_CAINFO, caFile)
            try easy.set(CURLOPT_CAPATH, pointer: nil)
        }
        if let pins = transport.pinnedPublicKey { try easy.set(CURLOPT_PINNEDPUBLICKEY, pins) }
        if let proxy = transport.proxy { try easy.set(CURLOPT_PROXY, proxy) }
    }

    private func configureMethod(_ request: HTTPRequest) throws {
        let method = request.method.uppercased()
        switch (method, request.body) {
        case ("GET", nil):
            try easy.set(CURLOPT_HTTPGET, 1)
        case ("HEAD", nil):
            try easy.set(CURLOPT_NOBODY, 1)
        case (_, let body?):
            try easy.set(CURLOPT_POST, 1)
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(body.count))
            // COPYPOSTFIELDS copies the bytes, so the array need not outlive this call.
            try body.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress {
                    try easy.set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: base))
                } else {
                    try easy.set(CURLOPT_COPYPOSTFIELDS, "")
                }
            }
            if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, request.method) }
        case ("POST", nil):
            try easy.set(CURLOPT_POST, 1)
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: 0)
            try easy.set(CURLOPT_COPYPOSTFIELDS, "")
        default:
            try easy.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
    }

    /// `CURLINFO_HTTP_VERSION`'s number as the version's name.
    static func versionName(_ version: Int?) -> String? {
        switch version {
        case CURL_HTTP_VERSION_1_0: return "1.0"
        case CURL_HTTP_VERSION_1_1: return "1.1"
        case CURL_HTTP_VERSION_2_0: return "2"
        case CURL_HTTP_VERSION_3: return "3"
        default: return nil
        }
    }

    /// From curl's progress callback, on the transfer thread: a shared rate that went up (or
    /// was lifted) raises this handle's own limit at once; curl only stores the value, and a
    /// higher limit never makes it wait longer. A lower rate is left to `ReceiveRate.take`.
    func followRateRise() {
        guard appliedRecvSpeed > 0, let receiveRate else { return }
        let rate = receiveRate.bytesPerSecond ?? 0
        guard rate == 0 || rate > appliedRecvSpeed else { return }
        if (try? easy.set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: rate)) != nil { appliedRecvSpeed = rate }
    }

    private func milliseconds(_ seconds: Double) -> Int {
        max(1, Int((seconds * 1000).rounded(.up)))
    }
}
