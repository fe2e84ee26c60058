"""`vzarr.scan(..., client=...)`: a sharded scan on a dask.distributed cluster.

The client expands the inputs once (the sorted file list every shard of a run shares) and maps one
task per shard onto the cluster's workers. Each task scans its shard into a part (the library's
`Archive::scan_shard_on`, as `vzarr scan --shard` does) in a private directory of the worker and
returns the part's bytes, so the workers need no file system shared with the client: they need only
reach the inputs. The client stages the parts in a directory beside the output, merges them into the
output (written atomically, as every writer does) and removes the staging directory, whatever
happens.

Failures: a file that cannot be scanned is vzarr's one-line error, returned by the task as a value
(no retry would cure it) and raised on the client as the same exception class; the other tasks are
cancelled (one already running finishes its shard, removes its directory and is forgotten), the
staging directory is removed and no output is written. A task that raises anything else is run again up to
`retries` times (dask's `retries=`), and a task whose worker dies is rescheduled by the scheduler
(dask's `distributed.scheduler.allowed-failures`). `distributed` is imported only here, when a
client is given.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from typing import Any, Callable, Iterable, Mapping

from . import _vzarr

#: Shards per worker thread: a few more shards than threads keeps the workers busy to the end and
#: makes a retried shard cheap, while every shard costs one part to merge.
SHARDS_PER_THREAD = 2

#: The key prefix of the shard tasks (what a dashboard shows).
TASK_PREFIX = "vzarr-shard"


def shard_count(client: Any, files: int) -> int:
    """The number of shards for `files` files on `client`'s cluster: `SHARDS_PER_THREAD` per worker
    thread (waiting for a first worker when the cluster has none yet), at most one per file."""
    threads = sum(client.nthreads().values())
    if threads == 0:
        client.wait_for_workers(1)
        threads = sum(client.nthreads().values())
    return max(1, min(files, SHARDS_PER_THREAD * max(int(threads), 1)))


def scan_shard_task(
    index: int,
    count: int,
    files: list[str],
    concat: list[str],
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None,
    sidecars: str | None,
) -> tuple[str, Any, Any]:
    """Runs on a worker: scans shard `index` of `count` of `files` into a part in a temporary
    directory (the worker's local directory when there is one) and returns ``("part", bytes,
    report)``, or ``("error", exception class name, message)`` for vzarr's own errors."""
    with tempfile.TemporaryDirectory(prefix="vzarr-shard-", dir=_worker_directory()) as directory:
        path = os.path.join(directory, "part.vzpart")
        try:
            report = _vzarr.scan_shard(
                files, concat, path, index, count, skip_unsupported, storage_options, sidecars, True
            )
        except _vzarr.Error as error:
            return ("error", type(error).__name__, str(error))
        with open(path, "rb") as part:
            return ("part", part.read(), report)


def file_list(files: list[str]) -> list[str]:
    """The run's file list, as the task the shard tasks share it through."""
    return files


def _worker_directory() -> str | None:
    try:
        from distributed import get_worker

        directory: str = get_worker().local_directory
        return directory
    except (ImportError, ValueError):
        return None


def staging_directory(output: str) -> str:
    """A new directory for the parts: beside a local `output` (hidden, named after it), in the
    system's temporary directory for an object-store output."""
    if "://" not in output:
        parent = os.path.dirname(os.path.abspath(output))
        if os.path.isdir(parent):
            name = os.path.basename(os.path.normpath(output))
            return tempfile.mkdtemp(prefix=f".{name}.vzparts-", dir=parent)
    return tempfile.mkdtemp(prefix="vzarr-parts-")


def scan_on_cluster(
    client: Any,
    inputs: list[str],
    concat: list[str],
    output: str,
    merge: Callable[[list[str]], dict[str, Any]],
    *,
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None,
    sidecars: str | None,
    retries: int | None,
    progress: bool,
) -> tuple[dict[str, Any], int]:
    """Scans `inputs` in shards on `client`'s workers and calls ``merge(parts)`` with the staged
    part files; returns its report and the number of files scanned from sidecars."""
    import distributed

    as_completed: Callable[[list[Any]], Iterable[Any]] = distributed.as_completed
    files = _vzarr.expand_inputs(inputs, concat, storage_options)
    count = shard_count(client, len(files))
    run = uuid.uuid4().hex[:12]
    # The list goes to the scheduler once, as a task every shard depends on: unlike scattered data,
    # it is computed again when the worker holding it dies.
    shared_files = client.submit(file_list, files, key=f"vzarr-inputs-{run}", pure=False)
    futures = client.map(
        scan_shard_task,
        range(count),
        count=count,
        files=shared_files,
        concat=concat,
        skip_unsupported=skip_unsupported,
        storage_options=storage_options,
        sidecars=sidecars,
        key=[f"{TASK_PREFIX}-{i}-of-{count}-{run}" for i in range(count)],
        pure=False,
        retries=retries,
    )
    staging = staging_directory(output)
    try:
        parts, from_sidecars = [], 0
        for done, future in enumerate(as_completed(futures), start=1):
            kind, payload, report = future.result()
            future.release()
            if kind == "error":
                raise getattr(_vzarr, payload, _vzarr.Error)(report)
            index, _ = report["shard"]
            path = os.path.join(staging, f"part-{index:05}-of-{count:05}.vzpart")
            with open(path, "wb") as part:
                part.write(payload)
            parts.append(path)
            from_sidecars += report["from_sidecars"]
            if progress:
                print(f"\rvzarr: scanned {done} of {count} shards", end="", file=sys.stderr, flush=True)
        if progress:
            print(file=sys.stderr)
        return merge(sorted(parts)), from_sidecars
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        client.cancel([shared_files])
        shutil.rmtree(staging, ignore_errors=True)

