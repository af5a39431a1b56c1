import Foundation
import Glibc

/// An HTTPS edge on loopback as a device meets one in the field: nginx (`nginx-light`) with TLS
/// and HTTP/2, a certificate from a private CA made here with `openssl`, as a reverse proxy in
/// front of an upstream (the reference origin). nginx runs in the foreground as a child
/// (`-p <dir> -c <conf> -g 'daemon off;'`) and is killed by `stop()` or deinit.
///
/// Its access log (`requests()`) says, per request, the protocol (`HTTP/2.0`) and whether the
/// TLS session was resumed (`r`), so tests can see what the client negotiated.
public final class TLSEdge: @unchecked Sendable {
    /// The folder holding the CA, the certificate, nginx's config, logs and temp files.
    public let folder: String
    public let port: Int
    /// The private CA's certificate (PEM): what `originCAFile` names to trust the edge.
    public var caFile: String { folder + "/ca.pem" }
    /// `sha256//BASE64` of the edge's public key (curl's `--pinnedpubkey` format).
    public let publicKeyPin: String
    public var baseURL: String { "https://127.0.0.1:\(port)" }
    private let process: Process

    /// Makes a CA and a certificate for 127.0.0.1 and localhost in a new folder under /tmp,
    /// and starts nginx on a free loopback port, passing every request to `upstreamPort`.
    public init(upstreamPort: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.nginx) else {
            throw HarnessError("\(Self.nginx) is missing: install the nginx-light package (make deps)")
        }
        var template = Array("/tmp/edge-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp failed: errno \(errno)")
        }
        folder = String(cString: made)
        try Self.makeCertificates(in: folder)
        publicKeyPin = try Self.pin(ofCertificate: folder + "/server.pem", in: folder)
        var lastError: Error?
        // The port is found free, released, then bound by nginx: another process may take it
        // in between, so a refused bind is tried again on another port.
        for _ in 0..<5 {
            let port = try LoopbackPort.free()
            do {
                process = try Self.startNginx(folder: folder, port: port, upstreamPort: upstreamPort)
                self.port = port
                return
            } catch {
                lastError = error
            }
        }
        throw lastError ?? HarnessError("nginx did not start")
    }

    deinit { stop() }

    /// Kills nginx (SIGKILL: it runs as one process, `master_process off`) and waits for it.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Stops nginx and deletes the folder.
    public func discard() {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// One line of the access log.
    public struct Request: Sendable, CustomStringConvertible {
        /// `HTTP/2.0` or `HTTP/1.1`.
        public var proto: String
        /// `r` when the TLS session was resumed, `.` after a full handshake.
        public var sessionReused: String
        public var status: Int
        public var method: String
        public var path: String
        public var description: String { "\(proto) \(sessionReused) \(status) \(method) \(path)" }
    }

    /// The requests the edge answered so far (nginx writes a line as each one ends).
    public func requests() -> [Request] {
        let text = (try? String(contentsOfFile: folder + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 5, let status = Int(fields[2]) else { return nil }
            return Request(proto: fields[0], sessionReused: fields[1], status: status, method: fields[3], path: fields[4])
        }
    }

    /// nginx's error log, for a failure message.
    public var errorLog: String { (try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? "" }

    static let nginx = "/usr/sbin/nginx"

    private static func startNginx(folder: String, port: Int, upstreamPort: Int) throws -> Process {
        try FileManager.default.createDirectory(atPath: folder + "/temp", withIntermediateDirectories: true)
        let config = """
            master_process off;
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log info;
            events { worker_connections 256; }
            http {
                log_format edge '$server_protocol $ssl_session_reused $status $request_method $uri';
                access_log \(folder)/access.log edge;
                client_body_temp_path \(folder)/temp/body;
                proxy_temp_path \(folder)/temp/proxy;
                fastcgi_temp_path \(folder)/temp/fastcgi;
                uwsgi_temp_path \(folder)/temp/uwsgi;
                scgi_temp_path \(folder)/temp/scgi;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(folder)/server.pem;
                    ssl_certificate_key \(folder)/server.key;
                    ssl_session_cache shared:edge:1m;
                    location / {
                        proxy_pass http://127.0.0.1:\(upstreamPort);
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_buffering off;
                        proxy_request_buffering off;
                    }
                }
            }

            """
        try config.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", folder, "-e", folder + "/error.log", "-c", folder + "/nginx.conf", "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if LoopbackPort.accepts(port) { return process }
            guard process.isRunning else {
                throw HarnessError(
                    "nginx exited with \(process.terminationStatus) before listening on \(port): "
                        + ((try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? ""))
            }
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw HarnessError("nginx did not listen on \(port) within 30 s")
    }

    /// A CA, and a server certificate it signs for IP 127.0.0.1 and DNS localhost (1 day).
    private static func makeCertificates(in folder: String) throws {
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: folder + "/server.ext", atomically: true, encoding: .utf8)
        try openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", folder + "/ca.key", "-out", folder + "/ca.pem", "-days", "2", "-subj", "/CN=Cassette Test Edge CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: folder)
        try openssl(
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", folder + "/server.key", "-out", folder + "/server.csr", "-subj", "/CN=127.0.0.1",
            ], in: folder)
        try openssl(
            [
                "x509", "-req", "-in", folder + "/server.csr", "-CA", folder + "/ca.pem", "-CAkey", folder + "/ca.key",
                "-CAcreateserial", "-out", folder + "/server.pem", "-days", "1", "-extfile", folder + "/server.ext",
            ], in: folder)
    }

    /// curl's pin of a certificate's key: sha256 of the DER SubjectPublicKeyInfo, base64.
    private static func pin(ofCertificate certificate: String, in folder: String) throws -> String {
        try openssl(["x509", "-in", certificate, "-pubkey", "-noout", "-out", folder + "/server.pub"], in: folder)
        try openssl(["pkey", "-pubin", "-in", folder + "/server.pub", "-outform", "DER", "-out", folder + "/server.pub.der"], in: folder)
        try openssl(["dgst", "-sha256", "-binary", "-out", folder + "/server.pub.sha256", folder + "/server.pub.der"], in: folder)
        guard let digest = FileManager.default.contents(atPath: folder + "/server.pub.sha256"), digest.count == 32 else {
            throw HarnessError("openssl made no SHA-256 of the server's public key")
        }
        return "sha256//" + digest.base64EncodedString()
    }

    private static func openssl(_ arguments: [String], in folder: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let log = folder + "/openssl.log"
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try? handle.close()
        guard process.terminationStatus == 0 else {
            throw HarnessError(
                "openssl \(arguments.prefix(2).joined(separator: " ")) failed: "
                    + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }
    }
}
