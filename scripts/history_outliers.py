#!/usr/bin/env python3
"""Which search `bench history changes` should use by default, measured:
its default (the ranks of the values, each step placed on their
logarithms; the logarithms alone before issue 55) or the values
themselves (`--linear`, as Apache Otava). Seeded series, made
here and added to a history as BMF files, then searched both ways:

- steps+outliers: 50 values around 100 (3 % normal noise), a -12 % step at
  entry 15 and a +7 % step at 35, two values at x0.5 and x0.55 (at
  seeded places, off the steps);
- steps: the same without the outliers;
- flat+outliers: 50 values around 100 and the two outliers: every change
  point found is a false one;
- tight-then-spread: 10 values around 46 (2 % noise), then 30 around 170
  spread log-normally (sd 0.35 of the logarithm), as the emulated kernels'
  breakpoint series: one step at 10.

Usage: scripts/history_outliers.py [BINARY] [SEEDS]; prints a Markdown
table: for each kind, how many of the true steps each way finds (a point
within one entry of a step) and how many points it finds that are none.
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/bench"
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20


def steps(rng, outliers):
    values = [100 * (1 if i < 15 else 0.88 if i < 35 else 0.88 * 1.07) * (1 + 0.03 * rng.gauss(0, 1))
              for i in range(50)]
    if outliers:
        places = rng.sample([i for i in range(50) if i not in (14, 15, 34, 35)], 2)
        values[places[0]] *= 0.5
        values[places[1]] *= 0.55
    return values, [15, 35]


def flat_outliers(rng):
    values = [100 * (1 + 0.03 * rng.gauss(0, 1)) for _ in range(50)]
    places = rng.sample(range(50), 2)
    values[places[0]] *= 0.5
    values[places[1]] *= 0.55
    return values, []


def tight_then_spread(rng):
    values = [46 * (1 + 0.02 * rng.gauss(0, 1)) for _ in range(10)]
    values += [170 * math.exp(0.35 * rng.gauss(0, 1)) for _ in range(30)]
    return values, [10]


KINDS = {
    "steps+outliers": lambda rng: steps(rng, True),
    "steps": lambda rng: steps(rng, False),
    "flat+outliers": flat_outliers,
    "tight-then-spread": tight_then_spread,
}


def bench(*args):
    out = subprocess.run([BINARY, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def main():
    series = {}
    for kind, make in KINDS.items():
        for seed in range(1, SEEDS + 1):
            series[f"{kind}-{seed}"] = make(random.Random(seed))
    with tempfile.TemporaryDirectory() as work:
        history = os.path.join(work, "h.sqlite")
        length = max(len(values) for values, _ in series.values())
        for i in range(length):
            doc = {name: {"throughput": {"value": values[i]}}
                   for name, (values, _) in series.items() if i < len(values)}
            path = os.path.join(work, f"{i:03}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            bench("history", "--history", history, "add", "--at", f"@{1_780_000_000 + 3600 * i}", path)
        found = {}
        for way, extra in (("default", []), ("--linear", ["--linear"])):
            for change in json.loads(bench("history", "--history", history, "changes", "--json", *extra)):
                found.setdefault((way, change["benchmark"]), []).append(change["index"])
    print("| series (20 seeds each) | true steps | found, default | false, default | found, --linear | false, --linear |")
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        row = [kind, 0, 0, 0, 0, 0]
        for seed in range(1, SEEDS + 1):
            name = f"{kind}-{seed}"
            truth = series[name][1]
            row[1] += len(truth)
            for col, way in ((2, "default"), (4, "--linear")):
                points = found.get((way, name), [])
                row[col] += sum(any(abs(p - t) <= 1 for p in points) for t in truth)
                row[col + 1] += sum(all(abs(p - t) > 1 for t in truth) for p in points)
        print("| " + " | ".join(str(x) for x in row) + " |")


main()
