"""Draws docs/assets/month-grid.svg: a year of daily steps as one chunk a month (the edges
`vzarr compact --chunks time=month` gives a noleap year), above the same year in regular chunks of
30 days, which cut every month. Run: python3 docs/assets/make_month_grid_svg.py"""

from pathlib import Path

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
LENGTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
SCALE, LEFT, ROW = 2.2, 150, 46


def row(y, edges, labels, fill):
    out, x = [], LEFT
    for edge, label in zip(edges, labels):
        w = edge * SCALE
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="30" fill="{fill}" stroke="#333"/>')
        out.append(f'<text x="{x + w / 2:.1f}" y="{y + 19}" text-anchor="middle" font-size="11">{label}</text>')
        x += w
    return out


parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + 365 * SCALE + 20:.0f}" height="{2 * ROW + 40}" font-family="sans-serif">']
parts.append('<text x="10" y="39" font-size="12">time=month</text>')
parts += row(20, LENGTHS, [f"{m} {n}" if n > 28 else m for m, n in zip(MONTHS, LENGTHS)], "#cfe3f7")
regular = [30] * 12 + [5]
parts.append(f'<text x="10" y="{39 + ROW}" font-size="12">time=30</text>')
parts += row(20 + ROW, regular, ["30"] * 12 + [""], "#eeeeee")
parts.append(f'<text x="{LEFT}" y="{2 * ROW + 32}" font-size="11">one year of daily steps (noleap): month chunks hold whole months; 30-day chunks cut them</text>')
parts.append("</svg>")
Path(__file__).with_name("month-grid.svg").write_text("\n".join(parts) + "\n")
