"""A small Cassette client: the standard library only (socket, struct, json).

Each Cassette service speaks JSON-RPC 2.0 on a Unix socket, one message per frame: a 4-byte
big-endian length, then that many bytes of UTF-8 JSON (docs/protocol.md). Answers and events
share the connection, so `call` keeps the events it reads past until you ask for them.

    from cassette_client import Client
    with Client.connect("player") as player:
        player.subscribe(["player"])
        player.call("station.tune", stationId="st-9")
        for event in player.events(timeout=5):
            print(event["type"], event["data"])
"""

import collections
import json
import os
import socket
import struct
import time

DEFAULT_RUNTIME_DIR = "/run/cassette"
MAX_FRAME_BYTES = 1 << 20


class CassetteError(Exception):
    """The service answered with an error. Match on `name` (stable), not on `message`."""

    def __init__(self, error):
        self.code = error.get("code")
        self.name = (error.get("data") or {}).get("name", "")
        self.message = error.get("message", "")
        super().__init__("%s (%s): %s" % (self.name, self.code, self.message))


class Client:
    """One connection to one service."""

    def __init__(self, path, timeout=30.0):
        self.path = path
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(path)
        self._next_id = 0
        self._events = collections.deque()

    @classmethod
    def connect(cls, service, runtime_dir=None, timeout=30.0):
        """Connects to `service` (downloader, player, reporter) in the runtime directory:
        `runtime_dir`, else $CASSETTE_RUNTIME_DIR, else /run/cassette."""
        directory = runtime_dir or os.environ.get("CASSETTE_RUNTIME_DIR") or DEFAULT_RUNTIME_DIR
        return cls(os.path.join(directory, service + ".sock"), timeout)

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Calls

    def call(self, method, params=None, **kwargs):
        """Calls `method` with `params` (a dict) and/or keyword params and returns its result;
        raises CassetteError on an error answer."""
        params = dict(params or {}, **kwargs)
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self._receive(self.timeout)
            if message.get("method") == "event":
                self._events.append(message["params"])
            elif message.get("id") == request_id:
                if "error" in message:
                    raise CassetteError(message["error"])
                return message.get("result")
            elif message.get("id") is None and "error" in message:
                # An error about the connection itself; the service closes it next.
                raise CassetteError(message["error"])

    def subscribe(self, topics=None):
        """Subscribes to event topics (all when None or empty)."""
        return self.call("events.subscribe", topics=list(topics or []))

    # Events

    def next_event(self, timeout=None):
        """The next event ({"topic","type","seq","data"}), or None after `timeout` seconds."""
        if self._events:
            return self._events.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            try:
                message = self._receive(left)
            except socket.timeout:
                return None
            if message.get("method") == "event":
                return message["params"]

    def events(self, timeout=None):
        """Yields events until none arrives for `timeout` seconds (forever when None)."""
        while True:
            event = self.next_event(timeout)
            if event is None:
                return
            yield event

    # Framing

    def _send(self, message):
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        self._sock.sendall(struct.pack(">I", len(body)) + body)

    def _receive(self, timeout):
        # Only the wait for a frame's first byte may time out: once a frame has begun, the rest
        # is read with the connection's own timeout, so a timeout never leaves half a frame read.
        self._sock.settimeout(timeout)
        try:
            first = self._sock.recv(4)
        finally:
            self._sock.settimeout(self.timeout)
        if not first:
            raise ConnectionError("%s closed the connection" % self.path)
        (length,) = struct.unpack(">I", first + self._read(4 - len(first)))
        if length == 0 or length > MAX_FRAME_BYTES:
            raise ConnectionError("bad frame length %d from %s" % (length, self.path))
        return json.loads(self._read(length).decode("utf-8"))

    def _read(self, count):
        data = bytearray()
        while len(data) < count:
            chunk = self._sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("%s closed the connection" % self.path)
            data += chunk
        return bytes(data)
