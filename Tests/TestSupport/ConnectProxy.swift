import Foundation
import Glibc

/// An HTTP CONNECT proxy on loopback (a small python3 asyncio script run as a child), as a
/// device behind a corporate or carrier proxy meets one. It tunnels only to loopback targets
/// and logs one line per CONNECT, so a test can prove that traffic went through it.
public final class ConnectProxy: @unchecked Sendable {
    public let folder: String
    public let port: Int
    private let process: Process

    /// `http://127.0.0.1:PORT`, the value for `originProxy` or `https_proxy`.
    public var url: String { "http://127.0.0.1:\(port)" }

    public init() throws {
        var template = Array("/tmp/prx-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp failed: errno \(errno)")
        }
        folder = String(cString: made)
        try Self.script.write(toFile: folder + "/proxy.py", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", folder + "/proxy.py", folder + "/port", folder + "/connects.log"]
        process.standardOutput = FileHandle.nullDevice
        let errors = folder + "/proxy.err"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(30)
        while true {
            if let text = try? String(contentsOfFile: folder + "/port", encoding: .utf8), let port = Int(text) {
                self.port = port
                return
            }
            guard process.isRunning, Date() < deadline else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                throw HarnessError("the CONNECT proxy did not start: " + ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""))
            }
            usleep(20_000)
        }
    }

    deinit { stop() }

    /// The targets (`host:port`) of the CONNECTs it tunnelled so far, in order.
    public var connects: [String] {
        ((try? String(contentsOfFile: folder + "/connects.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    public func discard() {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// argv: port file, CONNECT log. Anything but CONNECT to a loopback host is refused.
    static let script = #"""
        import asyncio, os, sys

        port_file, log_file = sys.argv[1], sys.argv[2]
        LOOPBACK = {"127.0.0.1", "::1", "localhost"}

        async def pipe(reader, writer):
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    writer.write(data)
                    await writer.drain()
            except Exception:
                pass
            finally:
                try:
                    writer.close()
                except Exception:
                    pass

        async def refuse(writer, status):
            writer.write(("HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % status).encode())
            await writer.drain()
            writer.close()

        async def handle(reader, writer):
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except Exception:
                writer.close()
                return
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(parts) < 2 or parts[0] != "CONNECT":
                return await refuse(writer, "405 Method Not Allowed")
            host, _, port = parts[1].rpartition(":")
            host = host.strip("[]")
            if host not in LOOPBACK or not port.isdigit():
                return await refuse(writer, "403 Forbidden")
            with open(log_file, "a") as log:
                log.write(parts[1] + "\n")
            try:
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
            except Exception:
                return await refuse(writer, "502 Bad Gateway")
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        async def main():
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            with open(port_file + ".tmp", "w") as f:
                f.write(str(server.sockets[0].getsockname()[1]))
            os.rename(port_file + ".tmp", port_file)
            async with server:
                await server.serve_forever()

        asyncio.run(main())
        """#
}
