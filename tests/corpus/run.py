#!/usr/bin/env python3
"""Runs the real-world corpus: `vzarr scan` then `vzarr verify` on every file fetch.py extracted.

Each file is scanned with `--skip-unsupported` (so one unsupported variable does not hide the rest)
and the store is verified (every value read through the store compared bit for bit with libnetcdf's
read of the file). Both run in a child process with a timeout and an address-space limit
(RLIMIT_AS). The outcome of a file is a set of lines:

    ok                                  scanned without warnings, verified
    unsupported: <variable>: <reason>   a variable left out (one line each); the rest verified
    warning: <text>                     any other scan warning
    error: <why>                        the scan refused the file (one line, the file's path as FILE)
    parity: <difference>                xarray on the store differs from xarray on the file
                                        (examples/xarray_parity.py: the kerchunk JSON and the
                                        materialized store through xarray's zarr engine, the native
                                        store through engine="vzarr"; `parity: zarr engine only: ..`,
                                        `vzarr engine only: ..` or `<kind> only: ..` when not all differ)
                                        against the source as xarray's netCDF4 engine shows it, or,
                                        for HDF5 files it misreads or cannot open, as its h5netcdf
                                        engine (h5py) shows it: `netCDF4 view only: ..` marks a
                                        difference from netCDF4's view where h5netcdf's equals the
                                        store, `h5netcdf view: ..` one from h5netcdf's view

and is compared with tests/corpus/expected.tsv (`<file id>\t<outcome line>[\t<reason>]`, several lines
per file when several variables are left out; a parity line carries the reason for the difference,
which --update keeps). The run fails on any difference from that list, on a file
missing from it, and on a crash (signal), panic, hang (timeout) or verify failure (a value
difference, or a variable the oracle could not compare) unless the list names that very failure as a
`known-defect: <failure> # <why>` line: a defect found and not fixed yet, reported by the run, and
failing it once it stops happening.

    target/pyenv/bin/python tests/corpus/run.py [--update] [--no-parity] [--bin target/release/vzarr] [FILTER]

libhdf5 reads PyTables' LZO chunks (filter 305) only through the test plugin: unless HDF5_PLUGIN_PATH
is set, the run builds it (tests/hdf5_plugins/build.sh into target/hdf5-plugins) and sets
HDF5_PLUGIN_PATH for verify (the plugin, hdf5plugin's blosc2 filter (32026), then libhdf5's default
directory) and for the parity step (the plugin, then netCDF4-python's own plugins: its libhdf5 must
not load Debian's, built for Debian's).

--update rewrites expected.tsv from this run (keeping its known-defect lines; new crashes, panics,
hangs and verify failures are never written: the run still fails). FILTER keeps only file ids containing it. The corpus comes from
$VZARR_CORPUS_DIR (else ~/.cache/vzarr-corpus), index.tsv.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.tsv"
PARITY_SCRIPT = HERE.parent.parent / "examples" / "xarray_parity.py"
PARITY = "parity: "
TIMEOUT_S = 300
# An expected line `known-defect: <start of the failure> # <why>` names a defect found by the corpus
# and not fixed yet (a crash or a verify failure): the file still runs, its failure must start with
# that text (anything else fails), and the run fails once it no longer happens (so it is removed).
KNOWN = "known-defect: "
# Tries of the crash probe (libnetcdf's crashes on some files happen in about two runs of three).
PROBES = 8
ADDRESS_SPACE = 8 << 30


def limit_child() -> None:
    """Runs in the child before exec: cap its address space."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# The environment of the xarray (netCDF4-python) steps: the test plugins and netCDF4-python's own on
# HDF5_PLUGIN_PATH, not Debian's plugin directory, whose plugins link Debian's libhdf5 (see plugins()).
PARITY_ENV: dict[str, str] | None = None


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Runs `cmd` limited; returns (exit code, or None on timeout; stderr + stdout)."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                             timeout=TIMEOUT_S, preexec_fn=limit_child, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TIMEOUT_S} s"
    return res.returncode, res.stderr + res.stdout


def fatal(code: int | None, out: str, step: str) -> str | None:
    """The reason a step's result fails whatever the list says: crash, panic, hang."""
    if code is None:
        return f"{step}: hang: {out}"
    if code < 0:
        return f"{step}: killed by signal {-code}"
    if "panicked at" in out:
        line = next(l for l in out.splitlines() if "panicked at" in l)
        return f"{step}: panic: {line}"
    if code not in (0, 1, 2, 3):
        return f"{step}: exit code {code}: {out.strip()[:300]}"
    return None


def scan_outcome(out: str, path: str) -> list[str]:
    """The outcome lines of a scan that wrote a store (exit 0 or 3)."""
    lines = []
    for line in out.splitlines():
        if not line.startswith("warning: "):
            continue
        text = line[len("warning: "):].replace(path, "FILE")
        if text.startswith("FILE: ") and ": left out: " in text:
            var, reason = text[len("FILE: "):].split(": left out: ", 1)
            lines.append(f"unsupported: {var}: {reason}")
        else:
            lines.append(f"warning: {text}")
    return sorted(set(lines)) or ["ok"]


def crashes_source(path: str) -> int | None:
    """The signal libnetcdf crashes with on `path` in any of PROBES tries of opening it alone."""
    for _ in range(PROBES):
        probe, _ = run([sys.executable, str(PARITY_SCRIPT), "--probe", path], PARITY_ENV)
        if probe is not None and probe < 0:
            return -probe
    return None


def crashed(signal: int) -> None:
    """Notes a source netCDF4-python crashes on (its parity then compares h5netcdf's view only). Which
    signal it dies of (SIGSEGV or SIGABRT, on the same corrupt heap) varies from run to run, so the
    parity lines do not name it."""
    print(f"note: netCDF4-python crashed on the source (signal {signal})", file=sys.stderr)


def parity_outcome(vzarr: str, store: str, tmp: str, path: str, crash_prone: bool = False
                   ) -> tuple[list[str], str | None]:
    """Exports the store as kerchunk JSON and materializes it, then runs examples/xarray_parity.py on
    them and the store: (`parity:` lines, fatal reason or None). A file listed as crashing libnetcdf is
    probed first, so that its outcome does not depend on whether this run happened to crash: when it
    crashes, only h5netcdf's view of the source is compared."""
    refs, zarr_dir = os.path.join(tmp, "refs.json"), os.path.join(tmp, "m.zarr")
    for step, cmd in (("export", [vzarr, "export", store, "--kerchunk", refs]),
                      ("materialize", [vzarr, "materialize", store, zarr_dir])):
        code, out = run(cmd)
        bad = fatal(code, out, step)
        if bad or code != 0:
            return [], bad or f"{step}: {out.strip()[:300]}"
    check = [sys.executable, str(PARITY_SCRIPT), "--json", refs, path, "--store", zarr_dir, "--store", store]
    signal = crash_prone and crashes_source(path)
    code, out = run(check + ["--netcdf4-crashes"] * bool(signal), PARITY_ENV)
    if not signal and code is not None and code < 0:
        # Killed by a signal: when opening the file alone crashes too, libnetcdf crashed on the source.
        # Its crashes on corrupt heaps come and go from run to run, so the probe gets several tries.
        if signal := crashes_source(path):
            code, out = run(check + ["--netcdf4-crashes"], PARITY_ENV)
    if signal:
        crashed(signal)
    if code != 0:
        return [], f"parity: {'hang' if code is None else f'exit code {code}'}: {out.strip()[-600:]}"
    found = json.loads(out.strip().splitlines()[-1])
    kinds = {"kerchunk": set(found[refs]), "materialized": set(found[zarr_dir]), "vzarr": set(found[store])}
    lines = []
    for diff in set().union(*kinds.values()):
        having = [kind for kind, diffs in kinds.items() if diff in diffs]
        where = "" if len(having) == len(kinds) else f"{KIND_NAMES.get(tuple(having), ' and '.join(having))} only: "
        lines.append(f"{PARITY}{where}{diff.replace(path, 'FILE')}")
    return lines, None


# How a parity line names the stores a difference shows in, when not in all three: the kerchunk JSON
# and the materialized store are opened with xarray's zarr engine, the native store with vzarr's.
KIND_NAMES = {("kerchunk", "materialized"): "zarr engine", ("vzarr",): "vzarr engine"}


# The prefix examples/xarray_parity.py gives a difference from netCDF4's view of a source whose
# h5netcdf view (h5py's) equals the store, and one from h5netcdf's view of a source netCDF4 cannot open.
NETCDF4_ONLY = "netCDF4 view only: "
H5NETCDF_VIEW = "h5netcdf view: "
# The prefix naming the stores a parity line's difference shows in, when not in all (`kerchunk only: `,
# `zarr engine only: `, ...: lower case, unlike NETCDF4_ONLY).
STORES_PREFIX = re.compile(r"^[a-z ]+ only: ")


def differs(line: str, engine: str, netcdf4_alone: bool = False) -> bool:
    """Whether an outcome line is a parity difference of `engine` ("zarr" or "vzarr"): one from the
    view the store is compared with (netCDF4's, or h5netcdf's where that equals the store), unless
    `netcdf4_alone`. The line saying the source's root group did not open is none; a group that did
    not open is one (nothing proves the store equal there)."""
    if not line.startswith(PARITY) or engine not in parity_kinds(line):
        return False
    body = STORES_PREFIX.sub("", line[len(PARITY):])
    body = body.removeprefix(NETCDF4_ONLY).removeprefix(H5NETCDF_VIEW)
    if body.startswith("/: not compared: "):
        return False
    return netcdf4_alone or NETCDF4_ONLY not in line


def parity_kinds(line: str) -> set[str]:
    """The engines a parity line's difference shows in ("zarr" and/or "vzarr")."""
    rest = line[len(PARITY):]
    if rest.startswith("vzarr engine only: "):
        return {"vzarr"}
    if rest.startswith(("zarr engine only: ", "kerchunk only: ", "materialized only: ")):
        return {"zarr"}
    return {"zarr", "vzarr"}


def check_file(vzarr: str, file_id: str, path: str, parity: bool, crash_prone: bool = False
               ) -> tuple[str, list[str], str | None, float]:
    """Scans and verifies one file (and checks xarray parity): (id, outcome lines, fatal reason or
    None, seconds)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vzarr-corpus-") as tmp:
        store = os.path.join(tmp, "s.vzarr")
        code, out = run([vzarr, "scan", path, "-o", store, "--skip-unsupported"])
        bad = fatal(code, out, "scan")
        if bad:
            return file_id, [], bad, time.monotonic() - start
        if code not in (0, 3):
            errors = [l for l in out.splitlines() if l.startswith("error: ")] or [out.strip()]
            why = errors[0].removeprefix("error: ").replace(path, "FILE")
            return file_id, [f"error: {why}"], None, time.monotonic() - start
        outcome = scan_outcome(out, path)
        code, vout = run([vzarr, "verify", store])
        bad = fatal(code, vout, "verify")
        if bad is None and code != 0:
            failed = [l.strip() for l in vout.splitlines() if l.startswith(("FAIL", "error"))]
            bad = "verify: " + " | ".join(failed or [vout.strip()])[:600]
        if parity and bad is None:
            lines, bad = parity_outcome(vzarr, store, tmp, path, crash_prone)
            outcome = sorted(set(outcome + lines) - {"ok"}) if lines else outcome
        return file_id, outcome, bad, time.monotonic() - start


def read_expected() -> tuple[dict[str, list[str]], dict[str, str]]:
    """expected.tsv as id -> sorted outcome lines, and (id + outcome) -> reason."""
    expected: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    if EXPECTED.exists():
        for line in EXPECTED.read_text().splitlines():
            if line and not line.startswith("#"):
                file_id, outcome, *reason = line.split("\t")
                expected.setdefault(file_id, []).append(outcome)
                if reason:
                    reasons[f"{file_id}\t{outcome}"] = reason[0]
    return {k: sorted(v) for k, v in expected.items()}, reasons


# A parity line for values the source side reads from memory libnetcdf never wrote: which values it
# shows changes from run to run, so the expected line names the variable only.
UNDEFINED_VALUES = "values differ (the source reads memory libnetcdf never wrote)"


def settle_undefined(outcome: list[str], want: list[str]) -> list[str]:
    """`outcome` with the `values differ (first at ...)` line of each variable whose expected line is
    UNDEFINED_VALUES replaced by that line."""
    undefined = {w.removesuffix(UNDEFINED_VALUES) for w in want if w.endswith(UNDEFINED_VALUES)}
    # The stores may read different garbage from the source, so a line may name the stores it is in.
    in_all = {o: PARITY + STORES_PREFIX.sub("", o[len(PARITY):]) if o.startswith(PARITY) else o
              for o in outcome}
    return sorted({next((u + UNDEFINED_VALUES for u in undefined if in_all[o].startswith(u + "values differ (")), o)
                   for o in outcome})


def parity_reason(outcome: str) -> str:
    """The known cause of a parity difference (from the wording examples/xarray_parity.py uses)."""
    for pattern, why in PARITY_CAUSES:
        if re.search(pattern, outcome):
            return why
    return "unexplained: to investigate"


# (pattern of a parity line, why the difference is there); the first match gives the reason.
PARITY_CAUSES = [
    (r"netCDF4 view only: /: not compared: ", "netCDF4 cannot open the source (or crashes on it); xarray's "
                                              "h5netcdf engine (h5py) opens it, and that view is compared"),
    (r"\(packed: ", "packed data: scale_factor/add_offset are JSON numbers, which carry no float32 type, so "
                   "xarray's zarr engine unpacks to float64 (kerchunk JSON alike); engine='vzarr' applies the types "
                   "vzarr records and unpacks to float32"),
    (r"dtype \|S\d+ != source object|values differ \(.*b'.*!= source nan",
     "a char array with a _FillValue: xarray's zarr engine fails on a _FillValue attribute of a Zarr v3 "
     "byte-string array, so vzarr withholds it (engine='vzarr' restores it and masks)"),
    (r"dtype \[.*\('0', ", "an array member of a compound: zarr-python's struct has no subarray fields, so vzarr "
                           "writes a struct of fields named by index (\"0\", \"1\", ...); the values are equal"),
    (r"h5netcdf view: .*(: dims \(.*'\w+_dim0'\) != source|: dimensions \[.*\('\w+_dim0', \d+\))",
     "an HDF5 array datatype: vzarr appends the array's dimensions, as h5py reads the values; xarray's "
     "h5netcdf engine gives the variable the dataset's dimensions only (netCDF4 does not list it)"),
    (r": variable .*: missing$", "a variable vzarr cannot virtualize (the unsupported line says why)"),
    (r": dimensions \[", "a dimension only variables vzarr leaves out use"),
    (r": attribute .*: missing \(source", "an attribute vzarr cannot represent (the warning line)"),
    (r"Shuffle buffer is not an integer multiple",
     "fletcher32 before shuffle in the HDF5 pipeline: numcodecs.shuffle refuses the checksummed buffer "
     "(vzarr's reader reads it)"),
    (r"not compared: netCDF4-python crashes", "libnetcdf crashes on the source: nothing to compare"),
    (r"not compared: the sources do not open", "xarray cannot open the source with netCDF4 (a filter "
                                              "plugin libnetcdf lacks, a type it refuses): nothing to compare"),
    (r"not compared: netCDF4 cannot open", "libnetcdf refuses the file: nothing to compare"),
    (r"GroupNotFoundError|no group '.*' in the store", "an HDF5 external link to a group of another file: "
                                                      "libnetcdf follows it, vzarr references no other file's groups"),
    (r"dtype \[.*'S\d+'.*\] != source \{'names'.*'S1'|values differ \(first at flat index \d+: \(.*b'[^']{2,}'.*\) "
     r"!= source \(.*b'[^']?'.*\)\)",
     "a fixed-length string member of a compound (PyTables tables): netCDF4-python presents it as 'S1' and "
     "shows its first byte only; vzarr stores the whole string, as h5py reads it"),
    (r"attribute flag_(values|meanings): extra", "vzarr names an enum's members as CF flags for Zarr readers; "
                                                 "netCDF4 keeps them in the enum type, as engine='vzarr' does"),
    (r"attribute created_on_s390x: extra", "an h5py bool (HDF5 enum) attribute netCDF4-python does not show; "
                                           "vzarr writes it as a JSON boolean, which h5py shows as numpy.bool_"),
    (r"dtype complex\d+ != source \{'names': \['r', 'i'\]",
     "h5py complex numbers: netCDF4 presents the compound {r, i}, vzarr stores Zarr complex64/complex128, as "
     "h5py reads them (the values are equal)"),
    (r"attribute \w+: \{'r': .*\(O scalar\) != source",
     "a complex attribute (the compound {r, i}) is a JSON object of its parts for Zarr readers (JSON has no "
     "complex numbers); engine='vzarr' gives the complex number its type note records, as h5py does"),
    (r"attribute \w+: .*j\)? \(c scalar\) != source \(.*\) \(V scalar\)",
     "a complex attribute: engine='vzarr' gives a complex number, as h5py and h5netcdf do; netCDF4 shows the "
     "compound {r, i} as a record"),
    (r"dtype \[.*\] != source \{'names': .*'offsets': \[\d+, \d+, 0\]",
     "a compound whose members are declared out of byte order: Zarr's struct lists its fields in byte order; "
     "vzarr's zarr.json note keeps the declared order, which engine='vzarr' applies (as h5py shows it)"),
    (r"values differ \(first at flat index 0: \(b'\*+', b'-+', b'\.+'\)",
     "a compound whose members are declared out of byte order: Zarr's struct lists its fields in byte order, "
     "so the records' fields come in another order; engine='vzarr' applies the declared order"),
]


def write_expected(results: dict[str, list[str]], keep: dict[str, list[str]], reasons: dict[str, str]) -> None:
    """Rewrites expected.tsv: this run's outcomes, plus the entries of files not run; parity lines
    keep their reason (or get the known cause of their wording)."""
    merged = {**keep, **{k: v for k, v in results.items() if v}}
    with open(EXPECTED, "w") as out:
        out.write("# Expected outcome of every real-world corpus file (tests/corpus/run.py).\n")
        out.write("# <file id>\\t<ok | unsupported: <variable>: <reason> | warning: .. | error: .. | "
                  "parity: <difference>\\t<why>>\n")
        for file_id in sorted(merged):
            for outcome in merged[file_id]:
                reason = reasons.get(f"{file_id}\t{outcome}")
                if outcome.startswith(PARITY) and not reason:
                    reason = parity_reason(outcome)
                    # A difference from netCDF4's view only: the reason it had when it was one.
                    before = reasons.get(f"{file_id}\t{outcome.replace(NETCDF4_ONLY, '', 1)}")
                    if NETCDF4_ONLY in outcome and before and "nothing to compare" not in before:
                        reason = f"{before} (xarray's h5netcdf engine shows the source as the store does)"
                out.write(f"{file_id}\t{outcome}" + (f"\t{reason}" if reason else "") + "\n")


def plugins() -> None:
    """Sets HDF5_PLUGIN_PATH to the test plugins (PyTables' LZO; hdf5plugin's blosc2) and libhdf5's
    default directory, unless it is set; without the plugin (no gcc or liblzo2-dev) the LZO files fail
    verify, as they should."""
    if "HDF5_PLUGIN_PATH" in os.environ:
        return
    build = HERE.parent / "hdf5_plugins" / "build.sh"
    res = subprocess.run(["bash", str(build), str(HERE.parent.parent / "target" / "hdf5-plugins")],
                         capture_output=True, text=True, env={"VZARR_PYTHON": sys.executable, **os.environ})
    if res.returncode == 0:
        global PARITY_ENV
        os.environ["HDF5_PLUGIN_PATH"] = res.stdout.strip()
        # netCDF4-python sets HDF5_PLUGIN_PATH to its own plugins (blosc, zstd, ...) when it is unset.
        probe = subprocess.run([sys.executable, "-c", "import os, netCDF4; print(os.environ.get('HDF5_PLUGIN_PATH', ''))"],
                               capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                                    if k != "HDF5_PLUGIN_PATH"})
        theirs = probe.stdout.strip().splitlines()[-1:] if probe.returncode == 0 else []
        PARITY_ENV = {**os.environ, "HDF5_PLUGIN_PATH": ":".join(res.stdout.strip().split(":")[:1] + theirs)}
    else:
        print(f"note: no LZO test plugin: {res.stderr.strip()[-300:]}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--bin", default=str(HERE.parent.parent / "target/release/vzarr"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-parity", action="store_true", help="skip the xarray parity step")
    parser.add_argument("filter", nargs="?", default="")
    args = parser.parse_args()
    root = Path(os.environ.get("VZARR_CORPUS_DIR") or Path.home() / ".cache" / "vzarr-corpus")
    index = root / "index.tsv"
    if not index.exists():
        print(f"run.py: {index} missing: run tests/corpus/fetch.py first", file=sys.stderr)
        return 2
    files = [l.split("\t", 1) for l in index.read_text().splitlines() if l]
    files = [(i, p) for i, p in files if args.filter in i]
    expected, reasons = read_expected()
    plugins()
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        crash_prone = {i for i, lines in expected.items() if any("netCDF4-python crashes" in l for l in lines)}
        done = list(pool.map(lambda f: check_file(args.bin, *f, not args.no_parity, f[0] in crash_prone), files))
    results, failures = {}, []
    known_hit = 0
    for file_id, outcome, bad, _ in done:
        want = expected.get(file_id, ["(not in expected.tsv)"])
        known = [k for k in want if k.startswith(KNOWN)]
        want = [w for w in want if not w.startswith(KNOWN)]
        if args.no_parity:
            want = sorted({w for w in want if not w.startswith(PARITY)} or {"ok"})
        outcome = settle_undefined(outcome, want)
        results[file_id] = known + outcome
        if bad and not any(bad.startswith(k[len(KNOWN):].split(" # ")[0]) for k in known):
            failures.append(f"{file_id}: {bad}")
        elif known and not bad:
            failures.append(f"{file_id}: fixed? remove from expected.tsv: {known}")
        elif not args.update and outcome != want and not (bad and not outcome):
            failures.append(f"{file_id}: expected {want}, got {outcome}")
        known_hit += bool(bad)
    ran = {d[0] for d in done}
    for file_id in sorted(expected):
        if args.filter in file_id and file_id not in ran:
            failures.append(f"{file_id}: in expected.tsv but not in the corpus (fetch.py: ncgen, gcc, HDF-EOS5?)")
    if args.update:
        if args.no_parity:  # keep the parity lines of the list
            results = {k: sorted(set(v + [w for w in expected.get(k, []) if w.startswith(PARITY)]) - {"ok"}
                                 or {"ok"}) for k, v in results.items()}
        write_expected(results, {k: v for k, v in expected.items() if args.filter not in k}, reasons)
    counts = {"ok": 0, "unsupported": 0, "error": 0, "warning": 0, "parity": 0}
    # Parity is measured on the files xarray opens, with netCDF4 or else h5netcdf (not those neither
    # opens); a file is the same when it equals one of the two views of the source (NETCDF4_ONLY: the
    # difference is from netCDF4's view, h5netcdf's equals the store). The figure against netCDF4's
    # view alone is printed too.
    not_compared = f"{PARITY}/: not compared: "
    scanned = [v for v in results.values() if not any(o.startswith(("error: ", not_compared)) for o in v)]
    same = {engine: sum(not any(differs(o, engine) for o in v) for v in scanned) for engine in ("vzarr", "zarr")}
    by_netcdf4 = [v for v in scanned if not any(f"{NETCDF4_ONLY}/: not compared: " in o for o in v)]
    same_netcdf4 = sum(not any(differs(o, "vzarr", netcdf4_alone=True) for o in v) for v in by_netcdf4)
    for outcome in results.values():
        kinds = {o.split(":")[0] for o in outcome if not o.startswith(KNOWN)}
        for kind in ("error", "unsupported", "warning", "ok", "parity"):
            if kind in kinds:
                counts[kind] += 1
                break
    slowest = sorted(done, key=lambda d: -d[3])[:3]
    for line in failures:
        print(f"FAIL {line}")
    print(f"corpus: {len(files)} files in {time.monotonic() - start:.0f} s: {counts['ok']} ok, "
          f"{counts['unsupported']} with unsupported variables, {counts['warning']} with warnings, "
          f"{counts['error']} errors, {known_hit} known defects; slowest: "
          + ", ".join(f"{d[0]} {d[3]:.1f} s" for d in slowest))
    if not args.no_parity:
        n = max(len(scanned), 1)
        print(f"xarray parity: {same['vzarr']} of {len(scanned)} files xarray opens open in xarray exactly as the "
              f"source with engine='vzarr' ({100 * same['vzarr'] / n:.1f}%), {same['zarr']} with xarray's zarr "
              f"engine on the kerchunk JSON and the materialized store ({100 * same['zarr'] / n:.1f}%); "
              f"{len(results) - len(scanned)} not compared; against netCDF4's view alone: {same_netcdf4} of "
              f"{len(by_netcdf4)} with engine='vzarr' ({100 * same_netcdf4 / max(len(by_netcdf4), 1):.1f}%)")
    passed = len(files) - len(failures)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
