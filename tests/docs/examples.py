#!/usr/bin/env python3
"""Runs every example of the documentation: the fenced shell, Python and Rust blocks of README.md and
docs/**/*.md, page by page, in order (a page's blocks share one working directory, as a reader
following it would), and checks the README's promises.

- A block is an example when its language is `sh`/`bash`/`shell`, `python` or `rust`. Blocks marked
  `{.illustrative}` (```` ```sh {.illustrative} ````; the site labels them) are not run: they need a
  bucket, a cluster or a date. Other languages (`text`, `toml`, `json`) are not examples.
- Each page runs in a fresh directory under --work holding `fixtures/` and `examples/` (links into the
  repository), with the `vzarr` of --bin and `python` (--python) first on PATH, and its own
  XDG_CONFIG_HOME (the trust list `vzarr scan` fills).
- Rust blocks are complete programs (`fn main`). They become the binaries of a crate made outside the
  workspace, in a temporary directory, that depends on vzarr by path: built twice, with vzarr's
  default features and with `default-features = false`, and both binaries run where the block stands.
  So `cargo add vzarr` works for a dependent crate and the README's library example is real code.
- README.md: at most 200 lines, both set-up commands (`./dev demo`, `./dev test`), every relative link
  leads to a file; the picture's edges are the sample store's (its `tas/zarr.json`); with --wheel, the
  wheel's long description is the README.

Usage: tests/docs/examples.py --bin target/debug --python target/pyenv/bin/python [--wheel W] [--no-python]
Prints the time each page took and the total; exits 1 on the first failure, showing the block and its
output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = {"sh", "bash", "shell"}
TIMEOUT = 600  # seconds per block
FENCE = re.compile(r"^(`{3,})(.*)$")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    illustrative: bool
    code: str

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def bin_name(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", f"{self.page}_{self.line}".lower()).strip("_")


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file (top-level fences; 3 or more backticks)."""
    page = str(path.relative_to(ROOT))
    out, lines, i = [], path.read_text().split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).strip()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        lang = re.split(r"[\s,{]", info.lstrip("{."), maxsplit=1)[0].lower() if info else ""
        illustrative = ".illustrative" in info
        out.append(Block(page, start, lang, illustrative, "\n".join(body) + "\n"))
    return out


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def fail(block: Block, why: str, output: str = "") -> None:
    print(f"FAILED {block.name} ({block.lang}): {why}", file=sys.stderr)
    print("---- block ----\n" + block.code + "---- output ----\n" + output[-6000:], file=sys.stderr)
    sys.exit(1)


def run(block: Block, argv: list[str], cwd: Path, env: dict) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        fail(block, f"timed out after {TIMEOUT} s", e.stdout or "")
    if done.returncode != 0:
        fail(block, f"exit status {done.returncode}", done.stdout)


def dependent_crate(rust: list[Block], target: Path, minimal: bool) -> tuple[str, Path]:
    """Builds a crate outside the workspace, in a temporary directory, depending on vzarr by path with
    its default features or `default-features = false`, one binary per Rust block. Returns the binary
    name prefix and the directory the binaries are in."""
    kind = "minimal" if minimal else "default"
    crate = Path(tempfile.mkdtemp(prefix=f"vzarr-dependent-{kind}-"))
    try:
        return kind, build_crate(crate, kind, rust, target, minimal)
    finally:
        shutil.rmtree(crate)


def build_crate(crate: Path, kind: str, rust: list[Block], target: Path, minimal: bool) -> Path:
    """Writes and builds the crate of `dependent_crate` in `crate`; returns where its binaries are."""
    features = ", default-features = false" if minimal else ""
    (crate / "Cargo.toml").write_text(
        f'[package]\nname = "vzarr-dependent-{kind}"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
        f'[dependencies]\nvzarr = {{ path = "{ROOT}"{features} }}\n\n'
        "# Its own workspace: a crate outside vzarr's, as a user's would be.\n[workspace]\n")
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")  # vzarr's tested versions of its dependencies
    (crate / "src" / "bin").mkdir(parents=True)
    for block in rust:
        if "fn main" not in block.code:
            fail(block, "a Rust example must be a whole program with `fn main` (or be marked {.illustrative})")
        (crate / "src" / "bin" / f"{kind}_{block.bin_name}.rs").write_text(block.code)
    # vzarr's own dev profile (line tables only), so the dependencies vzarr's tests built are reused
    # from the shared target directory rather than built again with full debug information.
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_PROFILE_DEV_DEBUG="line-tables-only")
    started = time.monotonic()
    done = subprocess.run(["cargo", "build", "--bins", "--quiet"], cwd=crate, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(f"FAILED: the crate depending on vzarr ({kind} features) does not build:\n{done.stdout[-8000:]}",
              file=sys.stderr)
        sys.exit(1)
    print(f"  built {crate} (vzarr{features or ' with default features'}, {len(rust)} examples): "
          f"{time.monotonic() - started:.1f} s")
    return target / "debug"


def page_dir(work: Path, page: str) -> Path:
    d = work / re.sub(r"[^A-Za-z0-9]+", "_", page)
    shutil.rmtree(d, ignore_errors=True)
    (d / "config").mkdir(parents=True)
    for name in ("fixtures", "examples"):
        (d / name).symlink_to(ROOT / name)
    return d


def check_readme(work: Path, env: dict, wheel: Path | None) -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.count("\n")
    problems = []
    if lines > 200:
        problems.append(f"{lines} lines (at most 200)")
    for command in ("./dev demo", "./dev test"):
        if command not in readme:
            problems.append(f"no `{command}`")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if "://" not in target and not (ROOT / target).exists():
            problems.append(f"link to {target}: no such file")
    sys.path.insert(0, str(ROOT / "docs" / "assets"))
    from make_grid_svg import EDGES  # the picture's edges

    grid = json.loads((work / "tas.vzarr" / "tas" / "zarr.json").read_text())["chunk_grid"]
    time_edges = []  # the rectilinear grid's edges along time; [size, count] is a run
    for edge in grid["configuration"]["chunk_shapes"][0]:
        time_edges += [edge[0]] * edge[1] if isinstance(edge, list) else [edge]
    if time_edges != EDGES:
        problems.append(f"the picture's edges {EDGES} are not the sample store's ({time_edges})")
    if wheel is not None:
        with zipfile.ZipFile(wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            body = z.read(meta).decode().split("\n\n", 1)[1]
        if body.strip() != readme.strip():
            problems.append(f"{wheel.name}: the long description is not README.md")
    if problems:
        print("FAILED README.md: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)


def tools_dir(work: Path, python: str | None) -> Path:
    """A directory for the front of PATH holding `python` (the --python interpreter)."""
    tools = work / "_bin"
    shutil.rmtree(tools, ignore_errors=True)
    tools.mkdir(parents=True)
    if python:  # a wrapper, not a link: a venv's python finds its venv from the path it was started by
        wrapper = tools / "python"
        wrapper.write_text(f'#!/bin/sh\nexec "{Path(python).absolute()}" "$@"\n')
        wrapper.chmod(0o755)
    return tools


def run_page(page: Path, todo: list[Block], args, builds: list, path: str, counts: dict) -> None:
    """Runs one page's examples in order in a fresh directory; the README's checks after its tour."""
    work = page_dir(args.work.resolve(), str(page.relative_to(ROOT)))
    env = dict(os.environ, PATH=path, XDG_CONFIG_HOME=str(work / "config"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("VZARR_ALLOW_SOURCES", None)
    for block in todo:
        if args.no_python and block.lang == "python":
            break  # the page's later blocks may need what this one makes
        if block.lang in SHELL:
            run(block, ["bash", "-euo", "pipefail", "-c", block.code], work, env)
            counts["sh"] += 1
        elif block.lang == "python":
            script = work / f"_example_{block.line}.py"
            script.write_text(block.code)
            run(block, ["python", str(script)], work, env)
            counts["python"] += 1
        elif builds:
            for kind, bin_dir in builds:
                run(block, [str(bin_dir / f"{kind}_{block.bin_name}")], work, env)
            counts["rust"] += 1
    if page.name == "README.md":
        check_readme(work, env, args.wheel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="directory holding the vzarr binary")
    parser.add_argument("--python", help="the Python that runs Python examples (vzarr, xarray, icechunk installed)")
    parser.add_argument("--no-python", action="store_true", help="say so and leave the Python examples out")
    parser.add_argument("--wheel", type=Path, help="check that this wheel's long description is README.md")
    parser.add_argument("--no-rust", action="store_true", help="leave out the Rust examples (while editing pages)")
    parser.add_argument("--page", default="", help="only the pages whose path contains this")
    parser.add_argument("--work", type=Path, default=ROOT / "target" / "doc-examples")
    parser.add_argument("--target", type=Path, default=ROOT / "target", help="cargo target directory")
    args = parser.parse_args()
    if not args.python and not args.no_python:
        parser.error("--python or --no-python")
    started = time.monotonic()
    all_blocks = {p: [b for b in blocks_of(p) if b.lang in SHELL | {"python", "rust"}]
                  for p in pages() if args.page in str(p.relative_to(ROOT))}
    skipped = sum(b.illustrative for bs in all_blocks.values() for b in bs)
    rust = [b for bs in all_blocks.values() for b in bs if b.lang == "rust" and not b.illustrative]
    builds = [] if args.no_rust else [dependent_crate(rust, args.target.resolve(), m) for m in (False, True)]
    tools = tools_dir(args.work.resolve(), args.python)
    path = f"{tools}:{Path(args.bin).resolve()}:{os.environ['PATH']}"
    counts = {"sh": 0, "python": 0, "rust": 0}
    for page, blocks in all_blocks.items():
        todo = [b for b in blocks if not b.illustrative]
        if todo:
            page_started = time.monotonic()
            run_page(page, todo, args, builds, path, counts)
            print(f"  {page.relative_to(ROOT)}: {len(todo)} examples, {time.monotonic() - page_started:.1f} s")
    if args.no_python:
        print("notice: the Python examples, and the blocks after the first on their page, were not run "
              "(no Python environment)", file=sys.stderr)
    print(f"docs examples: {counts['sh']} shell, {counts['python']} Python, {counts['rust']} Rust (each with "
          f"default features and default-features = false) passed; {skipped} illustrative blocks not run; "
          f"{time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
