#!/usr/bin/env python3
"""runlog.py — writes docs/runs.md, the dated log of the accuracy runs.

    python3 scripts/runlog.py > docs/runs.md

Reads records/live-checks.tsv (one row per judged cell of a live accuracy
test, appended by experiments/live_records.py) and records/accuracy.tsv (one
row per run of the old validate-live test, runs 1-31), and prints Markdown:
per recording, a summary row per test and every cell in a table; the 31
runs as one table with their medians, ranges and how often the goals were
met. docs/runs-notes.md (hand-written notes on individual runs) is appended
as it is. Python 3 standard library only; the output depends only on those
three files.
"""
import csv
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIVE = os.path.join(ROOT, "records", "live-checks.tsv")
ACC = os.path.join(ROOT, "records", "accuracy.tsv")
NOTES = os.path.join(ROOT, "docs", "runs-notes.md")

GOAL_CENTRAL = 5.0
GOAL_TAIL = 10.0


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def pct(s):
    """The recorded figure as written, with a % sign (NA stays NA)."""
    return "NA" if num(s) is None else s + "%"


def controls(s):
    """'name=1.2;other=NA' -> [(name, the recorded text)]."""
    out = []
    for part in (s or "").split(";"):
        if "=" in part:
            out.append(tuple(part.rsplit("=", 1)))
    return out


def anchor(text):
    """GitHub's heading anchor: lower case, spaces to '-', most punctuation dropped."""
    a = []
    for ch in text.lower():
        if ch.isalnum() or ch in "-_":
            a.append(ch)
        elif ch == " ":
            a.append("-")
    return "".join(a)


def heading(i, when, commit):
    return "Recording %d: %s, commit %s" % (i, when.replace("T", " "), commit)


def live_runs(rows):
    """Rows grouped by recording (time, commit, note), then by test, in file order."""
    runs = []
    for r in rows:
        k = (r["recorded"], r["commit"], r["note"])
        if not runs or runs[-1][0] != k:
            runs.append((k, []))
        tests = runs[-1][1]
        if not tests or tests[-1][0] != r["test"]:
            tests.append((r["test"], []))
        tests[-1][1].append(r)
    return runs


def summary(cells):
    """One test's cells: decided count, cells over their limit, the largest
    decided error, and the controls over the limit in some cell."""
    decided = [c for c in cells if c["decided"] == "true"]
    over = [c["cell"] for c in cells
            if num(c["error_pct"]) is not None and num(c["limit_pct"]) is not None
            and num(c["error_pct"]) > num(c["limit_pct"])]
    big = max(decided, key=lambda c: num(c["error_pct"]) or 0.0, default=None)
    names = [n for n, _ in controls(cells[0]["controls"])]
    missed = set()
    for c in cells:
        lim = num(c["limit_pct"])
        for n, v in controls(c["controls"]):
            if num(v) is not None and lim is not None and num(v) > lim:
                missed.add(n)
    return decided, over, big, names, missed


def print_live(rows, out):
    runs = live_runs(rows)
    out.append("## Live accuracy checks (`records/live-checks.tsv`)\n")
    out.append("One section per recording (`experiments/live_records.py` run after the tests; "
               "the time is when the rows were appended, the commit the code they ran). "
               "Each test's verdict is the test's own; *over limit* lists the cells whose "
               "error exceeded their limit (known gaps included: the file does not say which "
               "cells a test declared as known gaps); *controls over the limit* counts the "
               "wrong models whose error exceeded the limit in at least one cell. "
               "The rules behind limit, repeat and drift: "
               "[accuracy.md](accuracy.md#how-the-live-tests-decide).\n")
    for i, ((when, commit, note), tests) in enumerate(runs, 1):
        out.append("### %s\n" % heading(i, when, commit))
        out.append("%s.\n" % note.rstrip("."))
        out.append("| test | verdict | cells decided | over limit | largest decided error "
                   "(limit) | controls over the limit |")
        out.append("|---|---|---|---|---|---|")
        for test, cells in tests:
            decided, over, big, names, missed = summary(cells)
            bigs = ("%s %s (%s)" % (big["cell"], pct(big["error_pct"]), pct(big["limit_pct"]))
                    if big else "–")
            ctl = "%d of %d" % (len(missed), len(names)) if names else "–"
            out.append("| %s | %s | %d of %d | %s | %s | %s |" % (
                test, cells[0]["verdict"], len(decided), len(cells),
                ", ".join(over) if over else "none", bigs, ctl))
        out.append("")
        for test, cells in tests:
            names = [n for n, _ in controls(cells[0]["controls"])]
            out.append("<details><summary>%s: every cell</summary>\n" % test)
            two = any(c.get("recal_pct") not in (None, "", "NA") for c in cells)
            head = ["cell", "error", "repeat", "drift"] + (["recal"] if two else []) + \
                ["limit", "decided"] + names
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for c in cells:
                cv = dict(controls(c["controls"]))
                vals = [c["cell"], pct(c["error_pct"]), pct(c["repeat_pct"]), pct(c["drift_pct"])]
                vals += [pct(c["recal_pct"])] if two else []
                vals += [pct(c["limit_pct"]), c["decided"]]
                vals += [pct(cv.get(n)) for n in names]
                out.append("| " + " | ".join(vals) + " |")
            out.append("\n</details>\n")


QS = [("TTFT", "ttft"), ("TPOT", "tpot"), ("E2E", "e2e")]


def print_acc(rows, out):
    out.append("## validate-live runs 1–%d (`records/accuracy.tsv`)\n" % len(rows))
    out.append("The live validation test under its rules before 2026-12-03 (one validation, "
               "10 requests a level, closed loop c = 1..4 and open loop; see "
               "[runs-notes](#notes-on-individual-runs)). Median |error| over the levels, "
               "mean/p50 (central) / p90/p99 (tail); in brackets the speed-adjusted "
               "prediction where the run had one. The file has no date column. "
               "*Goals*: central at most %g%% and tail at most %g%% for all three "
               "quantities (plain prediction).\n" % (GOAL_CENTRAL, GOAL_TAIL))
    out.append("| run | CI | TTFT | TPOT | E2E | goals |")
    out.append("|---|---|---|---|---|---|")
    met = []
    for r in rows:
        cells = []
        ok = True
        for _, q in QS:
            c, t = num(r[q + "_central_pct"]), num(r[q + "_tail_pct"])
            ok = ok and c is not None and t is not None and c <= GOAL_CENTRAL and t <= GOAL_TAIL
            s = "%s / %s" % (pct(r[q + "_central_pct"]), pct(r[q + "_tail_pct"]))
            ac, at = r.get("adj_" + q + "_central_pct"), r.get("adj_" + q + "_tail_pct")
            if num(ac) is not None or num(at) is not None:
                s += " (%s / %s)" % (pct(ac), pct(at))
            cells.append(s)
        if ok:
            met.append(r["run"])
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            r["run"], r["ci"], cells[0], cells[1], cells[2], "met" if ok else "missed"))
    out.append("")
    out.append("Goals met in %d of %d runs (runs %s).\n" % (len(met), len(rows), ", ".join(met)))

    def stat(key, rs):
        xs = [num(r[key]) for r in rs if num(r[key]) is not None]
        if not xs:
            return "–"
        return "%.1f%% (%.1f–%.1f%%)" % (statistics.median(xs), min(xs), max(xs))

    adj = [r for r in rows if num(r.get("adj_ttft_central_pct")) is not None]
    out.append("Median over the runs (range):\n")
    out.append("| | central | tail | speed-adjusted central | speed-adjusted tail |")
    out.append("|---|---|---|---|---|")
    for name, q in QS:
        out.append("| %s | %s | %s | %s | %s |" % (
            name, stat(q + "_central_pct", rows), stat(q + "_tail_pct", rows),
            stat("adj_" + q + "_central_pct", adj), stat("adj_" + q + "_tail_pct", adj)))
    out.append("")
    if adj:
        out.append("Speed-adjusted figures: runs %s–%s (%d runs).\n"
                   % (adj[0]["run"], adj[-1]["run"], len(adj)))


def main():
    live = read_tsv(LIVE)
    acc = read_tsv(ACC)
    out = ["# Run log", "",
           "<!-- Generated: do not edit. -->",
           "Generated by `python3 scripts/runlog.py > docs/runs.md` from "
           "[records/live-checks.tsv](../records/live-checks.tsv) and "
           "[records/accuracy.tsv](../records/accuracy.tsv), with "
           "[docs/runs-notes.md](runs-notes.md) appended as written. Edit those files, "
           "not this one, and run the command again. What the product achieves now: "
           "[accuracy.md](accuracy.md); how the model was found: "
           "[model-notes.md](model-notes.md).", ""]
    runs = live_runs(live)
    out.append("Contents:\n")
    out.append("- [Live accuracy checks](#live-accuracy-checks-recordslive-checkstsv)")
    for i, ((when, commit, _), _) in enumerate(runs, 1):
        h = heading(i, when, commit)
        out.append("  - [%s](#%s)" % (h, anchor(h)))
    out.append("- [validate-live runs 1–%d](#%s)" % (
        len(acc), anchor("validate-live runs 1–%d (records/accuracy.tsv)" % len(acc))))
    notes = open(NOTES).read() if os.path.exists(NOTES) else ""
    for line in notes.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            t = line.lstrip("#").strip()
            out.append("%s- [%s](#%s)" % ("" if line.startswith("## ") else "  ", t, anchor(t)))
    out.append("")
    print_live(live, out)
    print_acc(acc, out)
    sys.stdout.write("\n".join(out).rstrip("\n") + "\n")
    if notes:
        sys.stdout.write("\n" + notes.rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
