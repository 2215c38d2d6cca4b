"""A loopback HTTPS server for the secrets specs (issue 33).

    tls_server.py CERT KEY LOG [REPO_ROOT]
    tls_server.py --silent LOG     accepts connections and never answers

Prints its port and pid. With EXPECT_AUTH in its environment, every request
must carry exactly that Authorization (else 401); the answers never echo it. Every request's head goes to LOG (one blank line after
each), so a spec can see what arrived upstream. Answers:
  /git/...           git's smart HTTP (git http-backend over REPO_ROOT),
                     401 without an Authorization header
  /events            server-sent events, three of them, chunked, 50 ms apart
  /ws                with Upgrade: 101, then every byte echoed back as it came
  anything else      200 with {"auth": present?, "path", "method", "body_bytes"}
Keep-alive (HTTP/1.1) as Python's http.server does it.
"""
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time

if sys.argv[1] == "--silent":
    import socket
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    print(lst.getsockname()[1], os.getpid(), flush=True)
    held = []
    while True:
        held.append(lst.accept()[0])

CERT, KEY, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
REPO = sys.argv[4] if len(sys.argv) > 4 else None
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self):
        with lock, open(LOG, "a") as f:
            f.write(self.requestline + "\r\n" + str(self.headers) + "\r\n")
        body = self._body()
        expect = os.environ.get("EXPECT_AUTH")
        if expect is not None and self.headers.get("Authorization") != expect:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/ws" and self.headers.get("Upgrade"):
            self.send_response(101)
            self.send_header("Upgrade", self.headers["Upgrade"])
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:  # no longer HTTP: bytes back as they came
                data = self.rfile.read1(65536)
                if not data:
                    break
                self.wfile.write(data)
                self.wfile.flush()
            self.close_connection = True
            return
        if self.path.startswith("/git/"):
            return self._git(body)
        if self.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                msg = ("data: event %d\n\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(msg), msg))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            return
        out = json.dumps({"auth": self.headers.get("Authorization") is not None, "path": self.path,
                          "method": self.command, "body_bytes": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def _git(self, body):
        path, _, query = self.path[len("/git"):].partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=REPO, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)))
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = do_POST = do_PUT = _handle


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], os.getpid(), flush=True)
server.serve_forever()
