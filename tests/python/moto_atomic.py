"""moto's S3 server with atomic writes, for the tests' S3 (started by tests/common/servers.rs and the
Python package's tests).

moto checks a PUT's `If-Match` / `If-None-Match` and then stores the object, with no lock between
the two, and its server answers requests on threads: two conditional writes racing on one key can
both pass the check (seen on a loaded machine: two Icechunk commits both moved one branch). S3
makes that check and the write one step, which is what vzarr's atomic outputs and Icechunk's
branch updates rely on. Here every request that writes (PUT, POST, DELETE) holds one lock while
moto handles it; reads stay concurrent.

Usage: moto_atomic.py [-H HOST] [-p PORT]
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

WRITES = {"PUT", "POST", "DELETE"}


def serialized_writes(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """`app` with every writing request handled under one lock, its reply read whole inside it."""
    lock = threading.Lock()

    def handle(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in WRITES:
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    return handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    args = parser.parse_args()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, serialized_writes(app), threaded=True)


if __name__ == "__main__":
    main()
