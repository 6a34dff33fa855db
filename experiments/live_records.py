#!/usr/bin/env python3
"""live_records.py — keeps the live accuracy tests' records.

    experiments/live_records.py [--note TEXT] [LOG...]

Each live accuracy test (tests/live/livecheck.py) prints one line
"livecheck-record {json}" with every term, limit, error, control outcome
and its verdict. This reads those lines from the given files (default: the
live suite's meson logs, build/meson-logs/live*.json and live*.txt, which
hold each test's output) and appends one row per judged cell to
records/live-checks.tsv: when, the commit, the test, its verdict, the cell,
the model's error, the repeat, the drift, the limit, whether the cell was
decided, each control's error there, and how far a second calibration's
model lands (recal, reported by the 4-slot test; NA elsewhere and before
2026-12-07). A record already in the file (same test, same figures) is not
added twice. Prints the rows it added.
"""
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "records", "live-checks.tsv")
COLS = ["recorded", "commit", "note", "test", "verdict", "cell", "error_pct", "repeat_pct",
        "drift_pct", "limit_pct", "decided", "controls", "recal_pct"]


def records(path):
    """The records in a file: its lines, or a meson JSON log's tests' output."""
    text = open(path, errors="replace").read()
    if path.endswith(".json"):
        outs = []
        for line in text.splitlines():
            try:
                t = json.loads(line)
            except ValueError:
                continue
            outs.append((t.get("stdout") or "") + "\n" + (t.get("stderr") or ""))
        text = "\n".join(outs)
    for line in text.splitlines():
        if line.startswith("livecheck-record "):
            yield json.loads(line[len("livecheck-record "):])


def fmt(x):
    return "NA" if x is None else "%.2f" % x if isinstance(x, float) else str(x)


def rows(rec, commit, note):
    when = time.strftime("%Y-%m-%dT%H:%M:%S")
    ctl = rec.get("controls", [])
    for c in rec.get("cells", []):
        ce = ";".join("%s=%s" % (k["name"], fmt(k["cells"].get(c["cell"]))) for k in ctl)
        yield [when, commit, note, rec["test"], rec["verdict"], c["cell"], fmt(c.get("error")),
               fmt(c.get("repeat")), fmt(c.get("drift")), fmt(c.get("limit")),
               str(c.get("decided")).lower(), ce, fmt(c.get("recal"))]


def main(argv):
    note = ""
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv[:1] == ["--note"]:
        if len(argv) < 2:
            sys.exit("live_records: --note needs a TEXT")
        note, argv = argv[1], argv[2:]
    missing = [p for p in argv if not os.path.isfile(p)]
    if missing:
        sys.exit("live_records: no such log file: %s" % ", ".join(missing))
    paths = argv or sorted(glob.glob(os.path.join(ROOT, "build", "meson-logs", "live*.json")))
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    seen = set()
    if os.path.exists(OUT):
        for line in open(OUT):
            f = line.rstrip("\n").split("\t")
            if len(f) == len(COLS):
                seen.add(tuple(f[3:]))
    new = []
    for p in paths:
        for rec in records(p):
            for r in rows(rec, commit, note):
                if tuple(r[3:]) not in seen:
                    seen.add(tuple(r[3:]))
                    new.append(r)
    fresh = not os.path.exists(OUT)
    with open(OUT, "a") as f:
        if fresh:
            f.write("\t".join(COLS) + "\n")
        for r in new:
            f.write("\t".join(r) + "\n")
    for r in new:
        print("\t".join(r))
    print("live_records: %d row(s) added to %s" % (len(new), os.path.relpath(OUT, ROOT)),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
