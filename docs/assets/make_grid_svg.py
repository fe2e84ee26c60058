"""Draws docs/assets/rectilinear-grid.svg: the sample archive's 12 monthly files (fixtures/sample/,
2023) and the rectilinear chunk grid vzarr gives `tas` along time. The edges are the files' own chunk
edges, the days of each month of 2023, as the sample store's `tas/zarr.json` records them; the docs
examples check that they still are (tests/docs/examples.py, after the README's tour).

Run: python3 docs/assets/make_grid_svg.py > docs/assets/rectilinear-grid.svg
"""

import calendar

EDGES = [calendar.monthrange(2023, m)[1] for m in range(1, 13)]  # [31, 28, 31, 30, ...]
SCALE = 2.0  # pixels per day
LEFT, WIDTH = 20, 365 * SCALE


def main() -> None:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT * 2 + WIDTH:.0f}" height="260" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="16" font-weight="bold">12 monthly files: tas_2023-01.nc ... tas_2023-12.nc, '
        "each chunked by its whole month</text>",
    ]
    x = LEFT
    for month, days in enumerate(EDGES, start=1):
        w = days * SCALE
        out.append(f'<rect x="{x + 2:.1f}" y="26" width="{w - 4:.1f}" height="30" rx="3" fill="#dbe9f6" stroke="#3a6ea5"/>')
        out.append(f'<text x="{x + w / 2:.1f}" y="46" text-anchor="middle">{month:02d}.nc</text>')
        out.append(f'<line x1="{x + w / 2:.1f}" y1="56" x2="{x + w / 2:.1f}" y2="88" stroke="#3a6ea5" '
                   'stroke-dasharray="3,2"/>')
        x += w
    x = LEFT
    for i, days in enumerate(EDGES):
        w = days * SCALE
        fill = "#f6d58e" if i % 2 == 0 else "#f0b94d"
        out.append(f'<rect x="{x:.1f}" y="92" width="{w:.1f}" height="44" fill="{fill}" stroke="#8a5a00"/>')
        out.append(f'<text x="{x + w / 2:.1f}" y="119" text-anchor="middle">{days}</text>')
        x += w
    out.append(f'<text x="{LEFT}" y="154" font-weight="bold">tas(time=365, lat, lon), one Zarr v3 array: '
               'chunk_grid "rectilinear", one (file, offset, length) per chunk</text>')
    out.append(f'<text x="{LEFT}" y="170" font-family="monospace">time edges {EDGES}</text>')
    # A regular grid cannot follow the files: 30-day chunks straddle months.
    out.append(f'<text x="{LEFT}" y="196" fill="#a33">a regular grid (here 30 days) would cut across the files: '
               "no chunk could be a reference</text>")
    for start in range(0, 365, 30):
        w = min(30, 365 - start) * SCALE
        out.append(f'<rect x="{LEFT + start * SCALE:.1f}" y="204" width="{w:.1f}" height="24" fill="none" '
                   'stroke="#a33" stroke-dasharray="4,2"/>')
    x = LEFT
    for days in EDGES[:-1]:
        x += days * SCALE
        out.append(f'<line x1="{x:.1f}" y1="200" x2="{x:.1f}" y2="232" stroke="#3a6ea5"/>')
    out.append(f'<text x="{LEFT}" y="250" fill="#555">blue: file boundaries; red: regular chunks</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
