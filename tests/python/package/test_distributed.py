"""`vzarr.scan(..., client=...)` on a real dask.distributed LocalCluster of two worker processes: the
store equals a one-machine `vzarr.scan`'s file for file, byte for byte, and every value read through
it equals netCDF4's read of the 1,000 files; a worker killed in the middle of a shard is retried and
the store is still the same; a file that cannot be scanned fails the call with one line naming it
and leaves no part, staging directory or output behind. Also `scan(shard=(i, n))` parts merged by
`vzarr.merge` (the job-array way from Python) and the options a shard scan refuses.

And on a real scheduler: a single-node Slurm cluster (Debian's munged, slurmctld and slurmd, set up
by `./dev setup`) started here as root without systemd, every file of it in a temporary directory,
as tests/scale_out/slurm.rs starts it; dask-jobqueue's SLURMCluster submits two worker jobs and the
cluster scan gives the one-machine store again. Where the cluster cannot start (not root, Slurm not
installed) that test is skipped with the reason, unless `VZARR_REQUIRE_SLURM=1` (`./dev test` sets it
once the packages are installed), which makes that a failure.

Reads scale out too: `xr.open_dataset(store, engine="vzarr", chunks={})` computed on the LocalCluster
(and on the SLURMCluster) equals netCDF4's read of the files for a native store, an Icechunk
repository, a kerchunk JSON file and a Parquet set, local and on the S3 server the tests start; each
worker opens the store once, whatever the number of tasks; `vzarr.Array` read in `multiprocessing`
processes started with spawn; `xr.open_mfdataset` over several stores with `parallel=True`.
"""

from __future__ import annotations

import operator
import os
import pickle
import multiprocessing
import shutil
import socket
import subprocess
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import vzarr
import xarray as xr
from conftest import read_concat, write_monthly
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

FILES = 1000
#: The `history` time of every store here, so stores written at different seconds compare equal.
EPOCH = "1700000000"


def write_daily(directory: Path, days: int) -> list[str]:
    """`days` one-day NetCDF-4 files along an unlimited `time`, `tas(time, lat, lon)` zlib-compressed."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(44)
    files = []
    for day in range(days):
        path = directory / f"tas_{day:04d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 3)
            ds.createDimension("lon", 4)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2001-01-01"
            t[:] = [day]
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 3, 4), zlib=True)
            v[0] = (250 + 30 * rng.random((3, 4))).astype("f4")
        files.append(str(path))
    return files


@pytest.fixture(scope="module")
def daily(tmp_path_factory) -> list[str]:
    return write_daily(tmp_path_factory.mktemp("daily"), FILES)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            yield client


@pytest.fixture(autouse=True)
def fixed_history_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (a store directory, or one file), by relative path."""
    if root.is_file():
        return {"": root.read_bytes()}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def shard_dirs_left(client) -> list[str]:
    """The workers' shard directories still there once every task has ended (a task the failed
    call cancelled while it ran finishes its shard and removes its directory: waited for, 60 s at
    most)."""

    def left(dask_worker) -> list[str]:
        return [n for n in os.listdir(dask_worker.local_directory) if n.startswith("vzarr-shard-")]

    deadline = time.monotonic() + 60
    while True:
        names = [name for names in client.run(left).values() for name in names]
        if not names or time.monotonic() > deadline:
            return names
        time.sleep(0.1)


def test_cluster_scan_is_the_one_machine_store_and_netcdf4s_values(daily, client, tmp_path):
    single = vzarr.scan(daily, concat="time", output=tmp_path / "single.vzarr")
    report = vzarr.scan(daily, concat="time", output=tmp_path / "cluster.vzarr", client=client)
    assert report.files == FILES == single.files
    assert (report.arrays, report.references, report.owned_chunks) == (
        single.arrays,
        single.references,
        single.owned_chunks,
    )
    assert report.output == str(tmp_path / "cluster.vzarr")
    a, b = tree(tmp_path / "single.vzarr"), tree(tmp_path / "cluster.vzarr")
    assert a.keys() == b.keys() and len(a) > 1
    for name in a:
        assert a[name] == b[name], f"{name} differs from the one-machine scan's"
    # Nothing but the two stores: the staging directory of the parts is gone.
    assert sorted(os.listdir(tmp_path)) == ["cluster.vzarr", "single.vzarr"]
    assert shard_dirs_left(client) == []
    store = vzarr.open(tmp_path / "cluster.vzarr")
    np.testing.assert_array_equal(store["tas"][...], read_concat(daily, "tas"))
    np.testing.assert_array_equal(store["time"][...], read_concat(daily, "time"))


class DieOnce(WorkerPlugin):
    """Kills its worker's process when the first vzarr shard task of the cluster starts (once: the
    marker file says it happened)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs) -> None:
        if finish != "executing" or not str(key).startswith("vzarr-shard"):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)


def test_a_worker_that_dies_is_retried(daily, client, tmp_path):
    files = daily[:200]
    vzarr.scan(files, concat="time", output=tmp_path / "single.vzarr")
    marker = tmp_path / "died"
    client.register_plugin(DieOnce(str(marker)), name="die-once")
    try:
        report = vzarr.scan(files, concat="time", output=tmp_path / "cluster.vzarr", client=client)
    finally:
        client.unregister_worker_plugin("die-once")
    assert marker.exists(), "no worker died: the test proved nothing"
    assert report.files == len(files)
    assert tree(tmp_path / "single.vzarr") == tree(tmp_path / "cluster.vzarr")
    np.testing.assert_array_equal(vzarr.open(tmp_path / "cluster.vzarr")["tas"][...], read_concat(files, "tas"))
    client.wait_for_workers(2)


def test_a_bad_file_fails_in_one_line_and_leaves_nothing(daily, client, tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for f in daily[:40]:
        os.symlink(f, inputs / os.path.basename(f))
    bad = inputs / "tas_0017b.nc"  # between two good files: not the first shard's first file
    bad.write_bytes(Path(daily[17]).read_bytes()[:300])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(vzarr.ScanError) as raised:
        vzarr.scan(str(inputs / "*.nc"), concat="time", output=out / "tas.vzarr", client=client)
    message = str(raised.value)
    assert "\n" not in message and "tas_0017b.nc" in message, message
    assert os.listdir(out) == []
    assert shard_dirs_left(client) == []


def test_an_existing_output_is_refused_before_the_cluster_works(daily, client, tmp_path):
    out = tmp_path / "tas.vzarr"
    out.mkdir()
    with pytest.raises(vzarr.AlreadyExists, match="tas.vzarr"):
        vzarr.scan(daily[:5], concat="time", output=out, client=client)
    assert os.listdir(out) == [] and sorted(os.listdir(tmp_path)) == ["tas.vzarr"]


def test_shard_parts_merged_are_the_one_machine_store(sample_files, tmp_path):
    single = tmp_path / "single.vzarr"
    vzarr.scan(sample_files, concat="time", output=single)
    parts = tmp_path / "parts"
    reports = [vzarr.scan(sample_files, concat="time", output=f"{parts}/", shard=(i, 3)) for i in range(3)]
    assert [r.shard for r in reports] == [(0, 3), (1, 3), (2, 3)]
    assert sum(r.files for r in reports) == len(sample_files) and all(r.inputs == 12 for r in reports)
    assert [r.first for r in reports] == [0, 4, 8]
    assert sorted(os.listdir(parts)) == [f"part-0000{i}-of-00003.vzpart" for i in range(3)]
    merged = vzarr.merge(f"{parts}/*.vzpart", concat="time", output=tmp_path / "merged.vzarr")
    assert merged.files == len(sample_files)
    assert tree(single) == tree(tmp_path / "merged.vzarr")
    np.testing.assert_array_equal(vzarr.open(tmp_path / "merged.vzarr")["tas"][...], read_concat(sample_files, "tas"))
    # A missing shard is refused by number, and nothing is written.
    os.remove(parts / "part-00001-of-00003.vzpart")
    with pytest.raises(vzarr.ScanError, match="1"):
        vzarr.merge(f"{parts}/*.vzpart", concat="time", output=tmp_path / "partial.vzarr")
    assert not (tmp_path / "partial.vzarr").exists()
    shutil.rmtree(parts)


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"shard": (3, 3)}, "0 <= i < n"),
        ({"shard": (0, 2), "take_first": ["lat"]}, "take_first applies when the parts are merged"),
        ({"shard": (0, 2), "format": "kerchunk-json"}, "format applies when the parts are merged"),
        ({"shard": (0, 2), "client": object()}, "exclude each other"),
    ],
)
def test_shard_scans_refuse(sample_files, tmp_path, kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        vzarr.scan(sample_files, concat="time", output=tmp_path / "p.vzpart", **kwargs)
    assert os.listdir(tmp_path) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def netcdf4_read(files: list[str]) -> xr.Dataset:
    """The files as xarray's netCDF4 engine reads them, concatenated along time, in this process."""
    ds = xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time", data_vars="minimal",
                           coords="minimal", compat="override", join="override")
    return ds.load(scheduler="synchronous")


def opened_on_workers(client: Client) -> list[int]:
    """How many stores each worker process has opened from pickled copies."""
    import vzarr._store

    return sorted(client.run(lambda: len(vzarr._store._REOPENED)).values())


@pytest.mark.parametrize("fmt, name", [("native", "tas.vzarr"), ("icechunk", "tas.icechunk"),
                                       ("kerchunk-json", "tas.json"), ("kerchunk-parquet", "tas.parq")])
def test_reads_compute_on_worker_processes(client, tmp_path, fmt, name):
    # Months of 30 days in chunks of 10: a regular grid, which the kerchunk formats need for tas.
    files = write_monthly(tmp_path / "src", days=(30, 30, 30), chunk=10)
    out = tmp_path / name
    if fmt == "kerchunk-parquet":
        # Written by export, which inlines `time` (rectilinear: the Zarr v2 of Parquet has no such grid).
        vzarr.scan(files, concat=["time"], output=tmp_path / "tas.vzarr")
        vzarr.export(tmp_path / "tas.vzarr", out, format=fmt)
    else:
        vzarr.scan(files, concat=["time"], output=out, format=fmt)
    client.run(lambda: __import__("vzarr._store")._store._REOPENED.clear())
    ds = xr.open_dataset(out, engine="vzarr", chunks={})
    assert ds.tas.data.npartitions == 9  # one task a chunk
    theirs = netcdf4_read(files)
    computed = ds.compute()  # on the cluster: the default client
    # Every store has every variable (the Parquet set's rectilinear `time` inlined by the export).
    assert set(computed.variables) == set(theirs.variables)
    for variable in computed.variables:
        xr.testing.assert_identical(computed[variable].variable, theirs[variable].variable)
    # Every task found its worker's store opened already: one store a worker that did work.
    assert set(opened_on_workers(client)) <= {0, 1} and 1 in opened_on_workers(client)


@pytest.mark.parametrize("fmt, name", [("native", "tas.vzarr"), ("icechunk", "tas.icechunk"),
                                       ("kerchunk-json", "tas.json"), ("kerchunk-parquet", "tas.parq")])
def test_reads_from_a_store_on_s3_compute_on_workers(client, tmp_path, s3_endpoint, fmt, name):
    # Regular months for the kerchunk formats (Zarr v2: tas needs a regular grid), the months' own
    # lengths (a rectilinear time) for the others.
    days = (30, 30, 30) if fmt.startswith("kerchunk") else (31, 28, 31)
    files = write_monthly(tmp_path / "src", days=days, chunk=10)
    options = {"endpoint_url": s3_endpoint, "key": "test", "secret": "test", "region": "us-east-1",
               "allow_http": "true"}
    url = f"s3://out/{name}"
    if fmt == "kerchunk-parquet":
        vzarr.scan(files, concat=["time"], output=tmp_path / "tas.vzarr")
        vzarr.export(tmp_path / "tas.vzarr", url, format=fmt, storage_options=options)
    else:
        vzarr.scan(files, concat=["time"], output=url, format=fmt, storage_options=options)
    ds = xr.open_dataset(url, engine="vzarr", chunks={}, storage_options=options)
    if fmt in ("native", "icechunk"):
        assert ds.tas.chunks[0] == (10, 10, 10, 1, 10, 10, 8, 10, 10, 10, 1)  # the months' chunks
    computed, theirs = ds.compute(), netcdf4_read(files)
    # Every store has every variable (the Parquet set's rectilinear `time` inlined by the export).
    assert set(computed.variables) == set(theirs.variables)
    for variable in computed.variables:
        xr.testing.assert_identical(computed[variable].variable, theirs[variable].variable)


def assert_same_dataset(ours: xr.Dataset, theirs: xr.Dataset) -> None:
    """Identical, but for the `history` line vzarr prepends when it combines files (CF 2.6.2)."""
    assert ours.attrs.pop("history", "").endswith(theirs.attrs.pop("history", ""))
    xr.testing.assert_identical(ours, theirs)


def test_open_mfdataset_parallel_over_several_stores(client, tmp_path):
    files = write_monthly(tmp_path / "src", days=(31, 28, 31, 30), chunk=10)
    stores = []
    for i, file in enumerate(files):
        stores.append(str(tmp_path / f"month{i}.vzarr"))
        vzarr.scan([file], output=stores[-1])
    # Each store is opened on a worker, whose trust list is its own: the sources' container is passed on.
    ds = xr.open_mfdataset(stores, engine="vzarr", parallel=True, combine="nested", concat_dim="time",
                           data_vars="minimal", coords="minimal", compat="override", join="override",
                           allow_sources=[str(tmp_path / "src")])
    assert_same_dataset(ds.compute(), netcdf4_read(files))


def test_arrays_read_in_spawned_processes(tmp_path):
    files = write_monthly(tmp_path / "src", days=(31, 28, 31), chunk=10)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=out)
    array = vzarr.open(out)["tas"]
    # What a copy holds: how to open the store, the path and metadata; no data, no open handle.
    assert len(pickle.dumps(array)) < 4096 and b"_inner" not in pickle.dumps(array)
    keys = [(slice(0, 31),), (slice(31, 59),), (slice(59, 90), 2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parts = pool.starmap(operator.getitem, [(array, key) for key in keys])
    expected = read_concat(files, "tas")
    for part, key in zip(parts, keys):
        np.testing.assert_array_equal(part, expected[key])


def slurm_conf(d: Path, host: str) -> str:
    return (
        f"ClusterName=vzarrpy\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n"
        f"SlurmctldPort={free_port()}\nSlurmdPort={free_port()}\nAuthType=auth/munge\n"
        f"AuthInfo=socket={d}/munge.sock\nCredType=cred/munge\nStateSaveLocation={d}/state\n"
        f"SlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n"
        f"SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
        "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMpiDefault=none\n"
        "SwitchType=switch/none\nSchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
        "SelectTypeParameters=CR_Core\nReturnToService=2\nMinJobAge=600\n"
        f"NodeName=vzarrnode NodeAddr=127.0.0.1 NodeHostname={host} CPUs={os.cpu_count() or 1} State=UNKNOWN\n"
        "PartitionName=vzarr Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
    )


def start_slurm(d: Path, daemons: list[subprocess.Popen]) -> str:
    """Starts munged, slurmctld and slurmd in `d` (appended to `daemons`) and waits for the node to
    be idle; returns the reason when it cannot, else an empty string."""
    if os.geteuid() != 0:
        return "not root (slurmd runs jobs as root here)"
    programs = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", shutil.which("sbatch")]
    missing = [p for p in programs if not p or not os.path.exists(p)]
    if missing:
        return f"{missing[0] or 'sbatch'} is not installed (./dev setup installs slurmctld, slurmd and munge)"
    for sub in ("state", "spool"):
        (d / sub).mkdir(parents=True)
    key = os.open(d / "munge.key", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(key, os.urandom(1024))
    os.close(key)
    conf = d / "slurm.conf"
    conf.write_text(slurm_conf(d, socket.gethostname().split(".")[0]))
    env = dict(os.environ, SLURM_CONF=str(conf))

    def spawn(name: str, argv: list[str]) -> None:
        with open(d / f"{name}.out", "wb") as log:
            daemons.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log))

    munge = [f"--{n}={d}/munged.{n}" for n in ("log-file", "pid-file", "seed-file")]
    spawn("munged", ["/usr/sbin/munged", "-F", "-f", f"--socket={d}/munge.sock", f"--key-file={d}/munge.key", *munge])
    deadline = time.monotonic() + 60
    while not (d / "munge.sock").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-c", "-f", str(conf)])
    spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-N", "vzarrnode", "-f", str(conf)])
    state = ""
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True).stdout
        if state.strip() == "idle":
            os.environ["SLURM_CONF"] = str(conf)
            return ""
        exited = [(p.args[0], p.returncode) for p in daemons if p.poll() is not None]
        if exited:
            return f"{exited[0][0]} exited ({exited[0][1]}): see {d}"
        time.sleep(0.25)
    return f"timed out waiting for the node to be idle (state {state.strip()!r}; logs in {d})"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running single-node Slurm cluster, stopped at the end (slurmd, slurmctld, then munged)."""
    d = tmp_path_factory.mktemp("slurm")
    daemons: list[subprocess.Popen] = []
    saved = os.environ.get("SLURM_CONF")
    try:
        why = start_slurm(d, daemons)
        if why:
            assert os.environ.get("VZARR_REQUIRE_SLURM") != "1", f"VZARR_REQUIRE_SLURM=1 but Slurm did not start: {why}"
            pytest.skip(f"the Slurm cluster cannot start: {why}")
        yield d
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
            try:
                daemon.wait(10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved


def test_dask_jobqueue_slurm_cluster_scan_is_the_one_machine_store(daily, slurm, tmp_path):
    from dask_jobqueue import SLURMCluster

    single = vzarr.scan(daily, concat="time", output=tmp_path / "single.vzarr")
    options = {"host": "127.0.0.1", "dashboard_address": ":0"}  # any free port
    with SLURMCluster(
        cores=1, processes=1, memory="1GB", walltime="00:10:00", queue="vzarr", scheduler_options=options,
        log_directory=str(slurm / "workers"), job_directives_skip=["--mem"],
    ) as cluster:
        cluster.scale(jobs=2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            report = vzarr.scan(daily, concat="time", output=tmp_path / "slurm.vzarr", client=client)
            # Reads on the same workers: the store's lazy arrays computed in the Slurm jobs.
            ds = xr.open_dataset(tmp_path / "slurm.vzarr", engine="vzarr", chunks={"time": 100})
            computed = ds.compute()
    assert report.files == FILES and report.references == single.references
    assert tree(tmp_path / "single.vzarr") == tree(tmp_path / "slurm.vzarr")
    assert sorted(os.listdir(tmp_path)) == ["single.vzarr", "slurm.vzarr"]
    np.testing.assert_array_equal(vzarr.open(tmp_path / "slurm.vzarr")["tas"][...], read_concat(daily, "tas"))
    np.testing.assert_array_equal(computed.tas.values, read_concat(daily, "tas"))
