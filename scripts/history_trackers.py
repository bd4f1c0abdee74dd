#!/usr/bin/env python3
"""bench's history against the trackers' own tools, run by
scripts/history_trackers.sh in a virtual environment that holds Apache
Otava and jsonschema (from PyPI).

1. Synthetic series, as the history's tests make them (40 BMF values: 20
   around 100 and 20 around 90, or 40 around 100; 3 % normal noise; seeds
   1 to 5): each added to a history, its change points found by
   `bench history changes --json`, exported with `--format otava` and
   analysed by `otava analyze` (Otava's default: windowed E-divisive with a
   t-test) and by Otava's original E-divisive with its permutation test
   (`compute_change_points_orig`, the algorithm bench implements).
2. The BMF export of each history validated against Bencher's published
   JSON schema (scripts/bmf.schema.json, from bencher.dev/bmf.json).
3. With --history PATH: the same side by side on every series of a real
   history (the kernel history of scripts/reproduce.sh), in --by order
   (the Otava CSV's rows too: Otava takes them in the file's order).
4. With --postgres URL (scripts/history_trackers.sh starts a throwaway
   server): the synthetic histories merged into one PostgreSQL history,
   exported with `--format otava` as an otava.yaml of postgres tests, and
   `otava analyze` run on the live store (the connection from Otava's
   POSTGRES_* environment): its change points must equal the CSV's, and
   `bench history changes --linear` on the store must equal the SQLite
   file's and Otava's on the series with a step.

Prints a Markdown table a part; exits 1 when a BMF file is not valid or
Otava cannot read a CSV.
"""

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

import jsonschema
from otava.analysis import compute_change_points, compute_change_points_orig

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "bmf.schema.json")


def bench(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def synthetic(seed, first, second, noise=0.03):
    rng = random.Random(seed)
    return [(first if i < 20 else second) * (1 + noise * rng.gauss(0, 1)) for i in range(40)]


def make_history(binary, path, name, values):
    files = []
    for i, value in enumerate(values):
        file = f"{path}.{i:03}.json"
        with open(file, "w") as f:
            # An interval as a harness would give it: the export keeps it.
            metric = {"value": value, "lower_value": value * 0.98, "upper_value": value * 1.02}
            json.dump({name: {"throughput": metric}}, f)
        files.append(file)
    # One hour apart, in the past year (Otava's default time span).
    start = 1_780_000_000
    for i, file in enumerate(files):
        bench(binary, "history", "--history", path, "add", "--at", f"@{start + 3600 * i}", file)


def validate_bmf(binary, history, schema):
    doc = json.loads(bench(binary, "history", "--history", history, "export", "--format", "bmf"))
    jsonschema.validate(doc, schema)
    # The validator is a real one: a measure without its value is refused.
    try:
        jsonschema.validate({"x": {"throughput": {"lower_value": 1.0}}}, schema)
        sys.exit("jsonschema took a measure without a value")
    except jsonschema.ValidationError:
        pass
    return sum(len(measures) for measures in doc.values())


def otava_cli(binary, history, workdir, args):
    """Otava's own reading of the export: {test: [indices]}."""
    out_dir = os.path.join(workdir, "otava")
    bench(binary, "history", "--history", history, "export", "--format", "otava", "-o", out_dir, *args)
    config = os.path.join(out_dir, "otava.yaml")
    return out_dir, {test: otava_analyze(config, test) for test in otava_tests(config)}


def otava_tests(config):
    """The test names of an otava.yaml: its keys two spaces in, which bench
    writes as double-quoted YAML strings (JSON's escapes) or bare."""
    with open(config) as f:
        keys = [line.strip()[:-1] for line in f if line.startswith("  ") and not line.startswith("   ")]
    return [json.loads(key) if key.startswith('"') else key for key in keys]


def otava_analyze(config, test, *extra):
    """`otava analyze` of one test: the indices of its change points."""
    out = subprocess.run(
        ["otava", "analyze", "--config-file", config,
         "--since", "1990-01-01", "--until", "2100-01-01", "--output", "json", *extra, test],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"otava analyze {test}: {out.stderr.strip()[-400:]}")
    report = json.loads(out.stdout)
    return sorted(c["index"] for group in report.get(test, []) for c in group["changes"])


def series_of(csv_path):
    """A CSV's values, and its machine and options (columns 4 and 7)."""
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    return [float(row[1]) for row in rows[1:]], rows[1][3], rows[1][6]


def otava_api(values, pvalue, magnitude):
    default, _ = compute_change_points(values, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    orig, _ = compute_change_points_orig(values, max_pvalue=pvalue, seed=1)
    return [c.index for c in default], sorted(c.index for c in orig)


def bench_changes(binary, history, args):
    found = json.loads(bench(binary, "history", "--history", history, "changes", "--json", *args))
    by_series = {}
    for change in found:
        key = (change["benchmark"], change["figure"], change["machine"], change["options"])
        by_series.setdefault(key, []).append((change["index"], round(change["change_pct"], 1)))
    return by_series


def shown(changes):
    return ", ".join(f"{i} ({pct:+.1f} %)" for i, pct in changes) or "none"


def indices(found):
    return ", ".join(map(str, found)) or "none"


def synthetic_part(binary, schema, workdir):
    print("| series | bench history changes | bench, --linear | otava analyze (t-test, windows) | Otava's original E-divisive (permutations) |")
    print("|---|---|---|---|---|")
    fields = 0
    for kind, second in (("step", 90.0), ("flat", 100.0)):
        for seed in range(1, 6):
            name = f"{kind}{seed}"
            history = os.path.join(workdir, f"{name}.sqlite")
            values = synthetic(seed, 100.0, second)
            make_history(binary, history, name, values)
            fields += validate_bmf(binary, history, schema)
            ours = sum(bench_changes(binary, history, []).values(), [])
            linear = sum(bench_changes(binary, history, ["--linear"]).values(), [])
            _, cli = otava_cli(binary, history, os.path.join(workdir, name), [])
            _, orig = otava_api(values, 0.01, 0.0)
            print(f"| {kind}, seed {seed} | {shown(ours)} | {shown(linear)} | "
                  f"{indices(sum(cli.values(), []))} | {indices(orig)} |")
    print(f"\nBMF: 10 exports, {fields} measures, valid against {os.path.basename(SCHEMA)}")


def history_part(binary, schema, history, workdir, order):
    fields = validate_bmf(binary, history, schema)
    print(f"BMF export of {history}: {fields} measures, valid against {os.path.basename(SCHEMA)}\n")
    ours = bench_changes(binary, history, ["--by", order])
    linear = bench_changes(binary, history, ["--by", order, "--linear"])
    out_dir, cli = otava_cli(binary, history, workdir, ["--by", order])
    print("| series | entries | bench history changes | bench, --linear | otava analyze | Otava's original E-divisive |")
    print("|---|---|---|---|---|---|")
    for test in sorted(cli):
        values, machine, options = series_of(os.path.join(out_dir, f"{test}.csv"))
        _, orig = otava_api(values, 0.01, 0.0)

        def of(found):
            return [c for key, changes in found.items()
                    if test.startswith(f"{key[0]}-{key[1]}") and (key[2], key[3]) == (machine, options)
                    for c in changes]
        print(f"| {test} ({machine}) | {len(values)} | {shown(of(ours))} | {shown(of(linear))} | "
              f"{indices(cli[test])} | {indices(orig)} |")


def postgres_part(binary, url, shown, workdir):
    """The synthetic step series in one PostgreSQL history: Otava on the
    store against Otava on the CSV and bench --linear on both stores."""
    print(f"PostgreSQL history {shown}: otava analyze on the store (postgres tests) "
          "against the CSV export and bench's --linear on both stores\n")
    print("| series | bench --linear, SQLite | bench --linear, PostgreSQL | otava analyze, CSV | otava analyze, PostgreSQL |")
    print("|---|---|---|---|---|")
    bench(binary, "history", "--history", url, "init")
    mismatches = 0
    for kind, second in (("step", 130.0), ("flat", 100.0)):
        for seed in range(1, 4):
            name = f"pg{kind}{seed}"
            history = os.path.join(workdir, f"{name}.sqlite")
            make_history(binary, history, name, synthetic(seed, 100.0, second))
            bench(binary, "history", "--history", url, "merge", history)
            lite = [i for i, _ in sum(bench_changes(binary, history, ["--linear"]).values(), [])]
            pg = [i for i, _ in sum(bench_changes(binary, url, ["--linear", name]).values(), [])]
            _, csv_found = otava_cli(binary, history, os.path.join(workdir, name), [])
            out_dir = os.path.join(workdir, name, "pg")
            bench(binary, "history", "--history", url, "export", name, "--format", "otava", "-o", out_dir)
            config = os.path.join(out_dir, "otava.yaml")
            with open(config) as f:
                if os.environ.get("POSTGRES_PASSWORD", "\0") in f.read():
                    sys.exit("the password is in otava.yaml")
            # --branch: Otava 0.8 runs a postgres query only with a parameter
            # (otava.yaml's queries name %{BRANCH} and ignore it).
            pg_found = {test: otava_analyze(config, test, "--branch", "any") for test in otava_tests(config)}
            otava_csv, otava_pg = sum(csv_found.values(), []), sum(pg_found.values(), [])
            same = lite == pg and otava_csv == otava_pg and (kind == "flat" or pg == otava_pg)
            mismatches += not same
            print(f"| {name} | {indices(lite)} | {indices(pg)} | {indices(otava_csv)} | "
                  f"{indices(otava_pg)}{'' if same else ' (differs)'} |")
    if mismatches:
        sys.exit(f"{mismatches} series differ between the stores or between bench and Otava")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default=os.path.join(HERE, "..", "target", "release", "bench"))
    parser.add_argument("--history", help="a history to compare on, every series")
    parser.add_argument("--by", default="time", choices=["time", "kernel"])
    parser.add_argument("--postgres", default=os.environ.get("BENCH_TRACKERS_POSTGRES"),
                        help="a PostgreSQL history's URL, an empty database, for part 4 "
                        "(default: $BENCH_TRACKERS_POSTGRES)")
    parser.add_argument("--postgres-shown", default="the PostgreSQL history", help="its name without the password")
    args = parser.parse_args()
    with open(SCHEMA) as f:
        schema = json.load(f)
    with tempfile.TemporaryDirectory(prefix="bench-trackers-") as workdir:
        if args.history:
            history_part(args.bench, schema, args.history, workdir, args.by)
        else:
            synthetic_part(args.bench, schema, workdir)
        if args.postgres:
            print()
            postgres_part(args.bench, args.postgres, args.postgres_shown, workdir)


if __name__ == "__main__":
    main()
