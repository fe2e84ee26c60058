"""Scans and reads from 8 threads at once: every result equals the sources."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import vzarr
from conftest import read_concat, write_monthly


def test_scan_and_read_from_eight_threads(tmp_path):
    archives = [write_monthly(tmp_path / f"a{i}", days=(31, 28 + i % 2, 31)) for i in range(8)]

    def scan(i):
        out = tmp_path / f"s{i}.vzarr"
        vzarr.scan(archives[i], concat=["time"], output=out)
        return out

    with ThreadPoolExecutor(8) as pool:
        stores = list(pool.map(scan, range(8)))
    shared = vzarr.open(stores[0])["tas"]
    # libnetcdf is not thread-safe: the expected values are read here, before the threads start.
    expected = [read_concat(files, "tas") for files in archives]
    expected0 = expected[0]

    def read(i):
        own = vzarr.open(stores[i])["tas"][...]
        np.testing.assert_array_equal(own, expected[i])
        # One Array shared by every thread.
        np.testing.assert_array_equal(shared[i : i + 50 : 3], expected0[i : i + 50 : 3])
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(read, list(range(8)) * 3))
