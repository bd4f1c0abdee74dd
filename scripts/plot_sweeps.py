#!/usr/bin/env python3
"""Several sweeps of one benchmark (bench --sweep ... --json FILE), one line
each, in one SVG: the wall time per operation (usecs/op, mean +- sd of each
point's seconds) against the swept value, both axes logarithmic, so that
O(n) growth is a slope of one and a flat line is O(1). Each line is labelled
with its file's kernel release (and "TCG" where it ran emulated).

    scripts/plot_sweeps.py -o sweep.svg 5.10/sweep.json 6.1/sweep.json
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

COLOURS = ["#c0392b", "#2471a3", "#229954", "#7d3c98"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 800, 500, 80, 30, 50, 60


def load(path):
    with open(path) as f:
        result = json.load(f)
    sweep = result.get("sweep") or {}
    points = []
    for run in result.get("runs", []):
        figure = (run.get("summary") or {}).get("usecs_per_op")
        if run.get("sweep_value") is None or not figure or figure["mean"] <= 0:
            continue
        points.append((run["sweep_value"], figure["mean"], figure.get("sd", 0.0)))
    if not points:
        sys.exit(f"plot_sweeps: {path} holds no sweep point with usecs/op")
    context = result.get("context", {})
    label = context.get("kernel_release", path)
    if context.get("vm") == "tcg":
        label += " (TCG)"
    return sweep.get("param", "value"), result.get("benchmark", ""), label, points


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", required=True, help="the SVG file to write")
    parser.add_argument("--title", default="", help="a line under the benchmark's name")
    parser.add_argument("sweeps", nargs="+", help="result files of bench --sweep")
    args = parser.parse_args()
    sweeps = [load(p) for p in args.sweeps]
    param, benchmark = sweeps[0][0], sweeps[0][1]

    xs = [p[0] for s in sweeps for p in s[3]]
    lows = [max(p[1] - p[2], p[1] / 2) for s in sweeps for p in s[3]]
    highs = [p[1] + p[2] for s in sweeps for p in s[3]]
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    y0, y1 = math.floor(math.log10(min(lows))), math.ceil(math.log10(max(highs)))
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def px(x):
        return LEFT + (math.log2(x) - x0) / (x1 - x0) * (W - LEFT - RIGHT)

    def py(y):
        return H - BOTTOM - (math.log10(y) - y0) / (y1 - y0) * (H - TOP - BOTTOM)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="15">'
        f"{escape(benchmark)}: usecs/op by {escape(param)}</text>",
        f'<text x="{W / 2}" y="38" text-anchor="middle">{escape(args.title)}</text>',
    ]
    for decade in range(y0, y1 + 1):
        y = py(10**decade)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{10**decade:g}</text>')
    for x in sorted(set(xs)):
        out.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#eee"/>')
        out.append(f'<text x="{px(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{x}</text>')
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
        'fill="none" stroke="black"/>'
    )
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 18}" text-anchor="middle">{escape(param)} (log scale)</text>')
    out.append(
        f'<text x="18" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {(TOP + H - BOTTOM) / 2})">usecs/op, wall time per operation (log scale)</text>'
    )
    for i, (_, _, label, points) in enumerate(sweeps):
        colour = COLOURS[i % len(COLOURS)]
        line = " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m, _ in points)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, m, sd in points:
            lo, hi = py(max(m - sd, m / 2)), py(m + sd)
            out.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{lo:.1f}" y2="{hi:.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(m):.1f}" r="3" fill="{colour}"/>')
        ly = TOP + 18 + 18 * i
        out.append(f'<line x1="{LEFT + 12}" x2="{LEFT + 36}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + 42}" y="{ly + 4}">{escape(label)}</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
