import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The servers the download benchmark fetches from: the reference origin itself, and nginx in
/// front of it — nginx serves the media files from the origin's data folder (`sendfile`,
/// keep-alive) and passes everything else (`/v1/…` API calls) to the origin, so the manifest's
/// relative media URLs resolve against nginx and only the bytes change server.
enum DownloadServers {
    /// Starts nginx on a free loopback port with a generated configuration in `folder`, serving
    /// the media folder and passing everything else (the API) to the origin; returns its base
    /// URL once it accepts connections.
    /// Its base URL, and the pid of its master process (the one launched: `daemon off`).
    static func startNginx(_ binary: String, folder: String, mediaRoot: String, originPort: String) throws -> (base: String, pid: pid_t) {
        try startNginx(
            binary, folder: folder,
            server: { port in
                """
                listen 127.0.0.1:\(port);
                root \(mediaRoot);
                location /media/ { }
                location /img/ { }
                location / {
                    proxy_pass http://127.0.0.1:\(originPort);
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_buffering off;
                }
                """
            })
    }

    /// Starts nginx (`sendfile on`, keep-alive, no access log) with one `server` block, given
    /// the port it listens on; `types` adds MIME types. Returns its base URL once it accepts.
    static func startNginx(_ binary: String, folder: String, types: String = "", server: (UInt16) -> String) throws -> (base: String, pid: pid_t) {
        try FileManager.default.createDirectory(atPath: folder + "/temp", withIntermediateDirectories: true)
        let port = try freeLoopbackPort()
        // As root, nginx's workers would become `nobody` and could not enter the bench's 0700
        // temporary folder: they stay the user the bench runs as.
        let user = geteuid() == 0 ? "user root root;\n" : ""
        let config = """
            \(user)daemon off;
            master_process on;
            worker_processes auto;
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                keepalive_timeout 65;
                keepalive_requests 100000;
                client_body_temp_path \(folder)/temp/body;
                proxy_temp_path \(folder)/temp/proxy;
                fastcgi_temp_path \(folder)/temp/fastcgi;
                uwsgi_temp_path \(folder)/temp/uwsgi;
                scgi_temp_path \(folder)/temp/scgi;
                \(types)
                default_type application/octet-stream;
                server {
            \(server(port))
                }
            }

            """
        try config.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
        let master = try ChildProcesses.shared.launch(
            binary, ["-p", folder, "-e", folder + "/error.log", "-c", folder + "/nginx.conf"],
            logFile: folder + "/nginx.log")
        let until = deadline(after: 30)
        while !canConnect(port: port) {
            guard monotonicNanos() < until else { throw BenchError("nginx did not listen on port \(port); see \(folder)/error.log") }
            sleepMicros(10_000)
        }
        return ("http://127.0.0.1:\(port)", master.pid)
    }

    /// A port the kernel just handed out for 127.0.0.1 (bound, then released).
    static func freeLoopbackPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError.system("socket") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw BenchError.system("bind") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    static func canConnect(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}

/// CPU time (user + system) of processes, for CPU-seconds per GiB.
enum ProcessCPU {
    /// Seconds of CPU a running process has used so far (/proc/PID/stat utime + stime).
    static func seconds(pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        // After "pid (comm)": state is field 3, utime field 14, stime field 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Seconds of CPU of a process and its live children (nginx's workers), from /proc.
    static func treeSeconds(pid: pid_t) -> Double {
        var total = seconds(pid: pid)
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8) else { continue }
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) { total += treeSeconds(pid: child) }
        }
        return total
    }
}
