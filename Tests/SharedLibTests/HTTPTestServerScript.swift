import Foundation

/// The loopback server `HTTPClientTests` starts per test: Python's `http.server` (which ignores
/// `Range`, as some origins do) with routes for redirects, echoes, slow and short bodies.
extension HTTPClientTests {
    static let serverScript = #"""
        import json, os, sys, time
        from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler

        ROOT = sys.argv[1]

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=ROOT, **kwargs)

            def log_message(self, *args):
                pass

            def reply(self, status, body=b"", headers=None):
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def route(self):
                path = self.path.split("?")[0]
                port = self.server.server_port
                if path == "/echo":
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else b""
                    doc = {"method": self.command, "path": self.path, "body": body.hex(),
                           "headers": {k.lower(): v for k, v in self.headers.items()}}
                    self.reply(200, json.dumps(doc).encode(), {"Content-Type": "application/json", "X-Echo": "yes"})
                elif path.startswith("/status/"):
                    code = int(path[len("/status/"):])
                    self.reply(code, json.dumps({"status": code}).encode(), {"Content-Type": "application/json"})
                elif path == "/slow":
                    time.sleep(3)
                    self.reply(200, b"late")
                elif path == "/redirect/same":
                    self.reply(302, b"", {"Location": "/echo"})
                elif path == "/redirect/loop":
                    self.reply(302, b"", {"Location": "/redirect/loop"})
                elif path == "/redirect/other":
                    self.reply(302, b"", {"Location": "http://localhost:%d/echo" % port})
                elif path.startswith("/ranged/") or path.startswith("/truncated/"):
                    kind, name = path[1:].split("/", 1)
                    with open(os.path.join(ROOT, name), "rb") as f:
                        data = f.read()
                    if kind == "truncated":
                        # Promise the whole file, send half, hang up.
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data[: len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return True
                    wanted = self.headers.get("Range", "")
                    if wanted.startswith("bytes="):
                        start = int(wanted[len("bytes="):].split("-")[0])
                        if start >= len(data):
                            self.reply(416, b"", {"Content-Range": "bytes */%d" % len(data)})
                        else:
                            self.reply(206, data[start:], {"Content-Range": "bytes %d-%d/%d" % (start, len(data) - 1, len(data))})
                    else:
                        self.reply(200, data, {"Accept-Ranges": "bytes"})
                else:
                    return False
                return True

            def do_GET(self):
                if not self.route():
                    super().do_GET()  # plain files; like `python3 -m http.server`, ignores Range

            def do_POST(self):
                if not self.route():
                    self.reply(404)

            do_PUT = do_POST
            do_DELETE = do_POST

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        print(server.server_port, flush=True)
        server.serve_forever()
        """#
}
