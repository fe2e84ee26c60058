"""A pytest plugin that runs seven netCDF classes of xarray's own backend tests (the installed
xarray's `xarray/tests/test_backends.py`) with their `open()` replaced by vzarr's read side.

    PYTHONPATH=tests/python/xarray_suite pytest -p conftest -c tests/python/xarray_suite/pytest.ini \
        <xarray>/tests/test_backends.py::TestNetCDF4Data ...

(`./dev test` runs it: `xarray_suite` in ./dev names the classes.) What it does:

- the classes write a dataset with netCDF4 or h5netcdf as they always do; their `open(path, **kwargs)`
  (`DatasetIOBase.open`, which none of the seven overrides) becomes `vzarr.scan([path], output=...)`
  into a native store beside the file, then `xr.open_dataset(store, engine="vzarr", **kwargs)`.
  Set `VZARR_XARRAY_SUITE=xarray` to keep xarray's own `open()`, the baseline the counts are
  measured against;
- each test's trust list is a temporary one (XDG_CONFIG_HOME), so the scans never touch the real one;
- the tests where vzarr deliberately differs from the netCDF4 engine (`EXPECTED_DIFFERENCES`) and
  those of what vzarr does not do yet (`NOT_YET`), each with its reason, are strict xfails: a test
  that starts passing fails the run until its entry goes;
- a test that never calls `open()` says nothing about vzarr: such tests are not counted, and the
  summary at the end names them ("N tests through vzarr: P passed, X expected differences, ...;
  M tests never call open(): ...").
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from typing import Any, Iterator

import pytest
import xarray as xr

USE_VZARR = os.environ.get("VZARR_XARRAY_SUITE", "vzarr") != "xarray"

#: The classes of xarray's test_backends.py run through vzarr.
CLASSES = (
    "TestNetCDF4Data",
    "TestNetCDF4ViaDaskData",
    "TestH5NetCDFData",
    "TestH5NetCDFViaDaskData",
    "TestNetCDF4ClassicViaNetCDF4Data",
    "TestNetCDF4ClassicViaH5NetCDFData",
    "TestNetCDF3ViaNetCDF4Data",
)

#: Tests that pass with xarray's engine and fail through vzarr on purpose: test id suffix -> reason.
#: A suffix is ``::Class::test`` (every parameter of the test) or ``::Class::test[param]`` (that
#: one). A deliberate difference is one a user would agree is better, never a missing feature.
EXPECTED_DIFFERENCES: dict[str, str] = {}

_ALL = CLASSES
_NETCDF4 = ("TestNetCDF4Data", "TestNetCDF4ViaDaskData", "TestH5NetCDFData", "TestH5NetCDFViaDaskData")
_H5NETCDF = ("TestH5NetCDFData", "TestH5NetCDFViaDaskData")
_NETCDF4_PYTHON = ("TestNetCDF4Data", "TestNetCDF4ViaDaskData")
_CLASSIC = ("TestNetCDF3ViaNetCDF4Data", "TestNetCDF4ClassicViaNetCDF4Data", "TestNetCDF4ClassicViaH5NetCDFData")

#: What vzarr does not do yet, each with the tests (classes, test) it keeps from passing: tests
#: that pass with xarray's engine and not through vzarr. Strict xfails, so that the day one passes
#: its entry must go.
_MISSING: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

#: `_MISSING` by test id suffix: ``::Class::test`` -> what is missing.
NOT_YET: dict[str, str] = {
    f"::{cls}::{test}": reason for reason, classes, tests in _MISSING for cls in classes for test in tests
}

#: The node ids of the tests that called the patched `open()`.
_CALLED_OPEN: set[str] = set()
#: The test running now (set around each test's call).
_CURRENT: list[str] = []
#: Each test's outcome: node id -> "passed", "failed", "xfailed", "xpassed", "skipped".
_OUTCOMES: dict[str, str] = {}
#: The tests this plugin marked as strict xfails: node id -> "difference" or "not yet".
_MARKED: dict[str, str] = {}


def _vzarr_open(self: Any, path: str, **kwargs: Any) -> Any:
    """`DatasetIOBase.open` through vzarr: the file scanned into a store beside it (removed with the
    test's temporary directory), the store opened with ``engine="vzarr"``."""
    import vzarr

    if _CURRENT:
        _CALLED_OPEN.add(_CURRENT[-1])
    store = f"{os.fspath(path)}.vzarr"
    vzarr.scan([os.fspath(path)], output=store, overwrite=True)
    with xr.open_dataset(store, engine="vzarr", **kwargs) as ds:
        yield ds


def _recording_open(original: Any) -> Any:
    """xarray's own `open()`, noting that the test called it (for the baseline's counts)."""

    def open(self: Any, path: str, **kwargs: Any) -> Iterator[Any]:
        if _CURRENT:
            _CALLED_OPEN.add(_CURRENT[-1])
        with original(self, path, **kwargs) as ds:
            yield ds

    return open


def pytest_configure(config: pytest.Config) -> None:
    from xarray.tests import test_backends

    base = test_backends.DatasetIOBase
    for name in CLASSES:
        cls = getattr(test_backends, name)
        # Only DatasetIOBase's open is replaced: a class with its own would be tested as it is.
        assert "open" not in vars(cls), f"{name} overrides open(): the harness would miss it"
    original = base.__dict__["open"].__wrapped__
    patched = _vzarr_open if USE_VZARR else _recording_open(contextlib.contextmanager(original))
    for name in CLASSES:
        setattr(getattr(test_backends, name), "open", contextlib.contextmanager(patched))


@pytest.fixture(autouse=True)
def private_trust_list(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's scans add their sources' containers to a trust list of their own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("VZARR_ALLOW_SOURCES", raising=False)


def _listed(nodeid: str, table: dict[str, str]) -> str | None:
    """The reason `table` gives for the test `nodeid`, if it lists it: by the test's name and
    parameters, or by its name alone (every parameter)."""
    base = nodeid.split("[")[0]
    return next(
        (reason for suffix, reason in table.items() if nodeid.endswith(suffix) or base.endswith(suffix)), None
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not USE_VZARR:
        return
    for item in items:
        if reason := _listed(item.nodeid, EXPECTED_DIFFERENCES):
            item.add_marker(pytest.mark.xfail(reason=f"vzarr differs on purpose: {reason}", strict=True))
            _MARKED[item.nodeid] = "difference"
        elif reason := _listed(item.nodeid, NOT_YET):
            item.add_marker(pytest.mark.xfail(reason=f"not in vzarr yet: {reason}", strict=True))
            _MARKED[item.nodeid] = "not yet"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    _CURRENT.append(item.nodeid)
    try:
        return (yield)
    finally:
        _CURRENT.pop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.outcome == "skipped" else "xpassed"
        else:
            outcome = report.outcome
        _OUTCOMES[report.nodeid] = outcome
    elif report.when == "teardown" and report.outcome == "failed":
        _OUTCOMES[report.nodeid] = "failed"


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    through = {n: o for n, o in _OUTCOMES.items() if n in _CALLED_OPEN}
    never = sorted(n for n, o in _OUTCOMES.items() if n not in _CALLED_OPEN and o != "skipped")
    skipped = sum(1 for n, o in _OUTCOMES.items() if n not in _CALLED_OPEN and o == "skipped")
    xfailed = Counter(_MARKED.get(n, "xarray") for n, o in through.items() if o == "xfailed")
    counts = Counter(through.values())
    engine = "vzarr" if USE_VZARR else "xarray's own open()"
    write = terminalreporter.write_line
    write("")
    write(
        f"{len(through)} tests through {engine}: {counts['passed']} passed, "
        f"{xfailed['difference']} expected differences, {xfailed['not yet']} not yet in vzarr, "
        f"{xfailed['xarray']} xfailed by xarray itself, {counts['failed']} failed, "
        f"{counts['skipped']} skipped after open()"
    )
    write(f"{skipped} tests skipped by xarray before any open() (not counted; -rs gives the reasons)")
    write(f"{len(never)} tests never call open() (not counted): " + ", ".join(map(_short, never)))
