"""Screenshots `vzarr.Store._repr_html_()` (what Jupyter shows for a store) of the sample archive
(fixtures/sample/*.nc, 12 monthly files of 2023 scanned along time) with headless Chromium, into
docs/assets/store-repr.png: the store's table and its `tas` array opened, with the SVG of the
rectilinear chunk grid (the months' 31, 28, 31, ... days along time).

Run by `./dev screenshot` (which installs Debian's chromium when missing and this tree's wheel in
target/pyenv); not part of `./dev test`. The window is sized to the rendered page: a first headless
run measures it (`--dump-dom`), the second takes the screenshot.

Usage: python docs/assets/make_repr_screenshot.py [--chromium chromium] [--out docs/assets/store-repr.png]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import tempfile
from pathlib import Path

import vzarr

ROOT = Path(__file__).resolve().parents[2]

#: Opens the `tas` array's details and writes the page's size into the title (read by --dump-dom).
SCRIPT = """
for (const d of document.querySelectorAll("details")) {
  if (d.querySelector("summary code").textContent === "tas") d.open = true;
}
const e = document.getElementById("page");
document.title = Math.ceil(e.scrollWidth) + "x" + Math.ceil(e.scrollHeight);
"""


def page(store_html: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>vzarr</title><style>"
        "body{margin:0;background:#fff;font-family:sans-serif;font-size:13px}"
        "#page{display:inline-block;padding:12px 16px}</style></head>"
        f"<body><div id='page'>{store_html}</div><script>{SCRIPT}</script></body></html>"
    )


def chromium(binary: str, *args: str) -> str:
    argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1", *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "assets" / "store-repr.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vzarr-screenshot-") as work:
        os.environ["XDG_CONFIG_HOME"] = os.path.join(work, "config")
        os.chdir(work)  # the store's location shows as the relative path a notebook would give
        files = sorted(glob.glob(str(ROOT / "fixtures" / "sample" / "*.nc")))
        vzarr.scan(files, concat="time", output="tas_2023.vzarr")
        html_path = Path(work) / "repr.html"
        html_path.write_text(page(vzarr.open("tas_2023.vzarr")._repr_html_()))
        url = html_path.as_uri()
        dom = chromium(args.chromium, "--window-size=1200,2000", "--dump-dom", url)
        size = re.search(r"<title>(\d+)x(\d+)</title>", dom)
        if size is None:
            raise SystemExit("chromium did not measure the page (no size in its title)")
        width, height = int(size.group(1)), int(size.group(2))
        chromium(args.chromium, f"--window-size={width},{height}", f"--screenshot={args.out}", url)
    print(f"{args.out}: {width}x{height}, {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
