"""A static file server with HTTP range requests, for vzarr's remote tests (no third-party code).

    range_server.py ROOT [--fail N] [--hang SUBSTRING]

Serves the files under ROOT on 127.0.0.1 (a free port, printed as `PORT <n>` once listening) for GET
and HEAD, with `Range: bytes=a-b` answered 206 with `Content-Range`, `Last-Modified` and an `ETag`
taken from the file's size and modification time. Faults for the tests:
  --fail N            the first N requests answer 503 Service Unavailable (a retry then succeeds)
  --hang SUBSTRING    requests whose path contains SUBSTRING never answer (a timeout must end them)
"""

import argparse
import email.utils
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class State:
    def __init__(self, root, fail, hang):
        self.root = os.path.realpath(root)
        self.fail = fail
        self.hang = hang
        self.lock = threading.Lock()


def handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def fault(self):
            if state.hang and state.hang in self.path:
                time.sleep(3600)
                return True
            with state.lock:
                failing = state.fail > 0
                state.fail -= failing
            if failing:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
            return failing

        def file(self):
            path = os.path.realpath(os.path.join(state.root, unquote(self.path.split("?")[0]).lstrip("/")))
            if not path.startswith(state.root + os.sep) or not os.path.isfile(path):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return path

        def respond(self, body):
            if self.fault():
                return
            path = self.file()
            if path is None:
                return
            meta = os.stat(path)
            size = meta.st_size
            start, end = 0, size - 1
            ranged = self.headers.get("Range")
            if ranged:
                first, _, last = ranged.removeprefix("bytes=").partition("-")
                start = int(first) if first else max(size - int(last), 0)
                end = min(int(last), size - 1) if first and last else size - 1
                if start >= size or start > end:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            self.send_response(206 if ranged else 200)
            if ranged:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Last-Modified", email.utils.formatdate(meta.st_mtime, usegmt=True))
            self.send_header("ETag", f'"{size:x}-{meta.st_mtime_ns:x}"')
            self.end_headers()
            if body:
                with open(path, "rb") as f:
                    f.seek(start)
                    self.wfile.write(f.read(end - start + 1))

        def do_GET(self):
            self.respond(True)

        def do_HEAD(self):
            self.respond(False)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--hang", default="")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(State(args.root, args.fail, args.hang)))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
