#!/usr/bin/env bash
# Creates the Python environment of the cross-implementation check (tests/python/check_interop.py):
# a venv at target/pyenv with pinned zarr-python 3, numcodecs, fsspec, xarray, netCDF4 and icechunk.
#
#   tests/python/setup.sh            create or update target/pyenv
#   VZARR_PYTHON=/path/to/python3.12 tests/python/setup.sh   use that interpreter for the venv
#
# The cargo test `interop::python_reads_kerchunk_and_materialized_stores` runs the check with
# $VZARR_PYTHON, else target/pyenv/bin/python. Without either it fails when VZARR_REQUIRE_PYTHON=1
# (`./dev test` sets it after this script succeeded), else prints a notice and passes.
# Exits non-zero, with the reason on the last line of stderr, when the environment cannot be made.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=target/pyenv
PINS=(
  "zarr==3.4.2"
  "numcodecs==0.17.1"
  "fsspec==2026.9.0"
  "xarray==2026.9.0"
  "netCDF4==1.7.5.1.post1"
  "numpy==2.5.5"
  "h5py==3.16.0"
  # xarray's h5netcdf engine: examples/xarray_parity.py's second view of HDF5 sources (h5py's), for
  # the files libnetcdf misreads or cannot open.
  "h5netcdf==1.8.2"
  # Writes the PyTables table of the compound-type tests (tests/python/make_structs.py).
  "tables==3.11.1"
  # The blosc filter (HDF5 filter 32001) for h5py: writes the blosc fixtures (tests/python/make_blosc.py)
  # and its plugin directory lets libhdf5 read them in the oracle (HDF5_PLUGIN_PATH).
  "hdf5plugin==7.1.0"
  # libhdf4's SD interface from Python: writes fixtures/hdf4 (make_fixtures.py), the HDF4 oracle.
  "pyhdf==0.11.7"
  "moto[server]==5.1.18"
  "s3fs==2026.9.0"
  # Reads the repositories of `scan --format icechunk` (tests/python/check_icechunk.py); 2.3.0 is the
  # Python release of the Rust crate 2.3.x vzarr writes with (format spec v2).
  "icechunk==2.3.0"
  # kerchunk's remote scan, timed next to vzarr's by benches/remote.rs.
  "kerchunk==0.2.10"
  # The Python package: built with maturin, tested with pytest (tests/python/package), dask chunks.
  "maturin==1.16.0"
  "pytest==9.2.0"
  "dask==2026.8.0"
  # vzarr.scan(client=...): the docs' dask example (docs/how-to/scale-out.md) runs a LocalCluster.
  "distributed==2026.8.0"
  # vzarr.virtualizarr.Parser is tested against VirtualiZarr's HDFParser.
  "virtualizarr==2.8.0"
  "obstore==0.12.1"
  # Parquet for kerchunk Parquet reference sets (tests/python/check_parquet.py): fsspec's
  # LazyReferenceMapper and kerchunk's refs_to_dataframe read and write through fastparquet.
  "fastparquet==2026.9.0"
)

pick_python() {
  local candidates=("${VZARR_PYTHON:-}" /root/.pyenv/versions/3.12.1/bin/python python3.13 python3.12 python3)
  for py in "${candidates[@]}"; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

if ! PY=$(pick_python); then
  echo "tests/python/setup.sh: no Python >= 3.12 found (set VZARR_PYTHON)" >&2
  exit 1
fi
echo "using $PY ($("$PY" --version 2>&1))" >&2
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}"; then
  echo "tests/python/setup.sh: pip could not install ${PINS[*]} (no network access to PyPI?)" >&2
  exit 1
fi
"$VENV/bin/python" -c 'import zarr, numcodecs, fsspec, xarray, netCDF4, numpy, h5py, icechunk
print("icechunk", icechunk.__version__, "zarr", zarr.__version__, "numcodecs", numcodecs.__version__, "fsspec", fsspec.__version__,
      "xarray", xarray.__version__, "netCDF4", netCDF4.__version__, "numpy", numpy.__version__)'
