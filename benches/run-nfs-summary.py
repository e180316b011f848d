#!/usr/bin/env python3
"""Summary table for benches/run-nfs: prepends issue 4's headline figures to
the markdown written by `rig report`.

usage: run-nfs-summary.py RAW.tsv REPORT.md PRESETS(comma list)
"""
import statistics
import sys
from collections import defaultdict

raw, md, presets = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
runs = defaultdict(list)  # (corpus, preset-label, tool) -> [(files/s, status)]
corpora = []
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    if f[0] == "corpus" or len(f) < 13:
        continue
    corpus, plabel, tool, wall, status = f[0], f[1], f[2], float(f[6]), f[7]
    files, done = int(f[8]), int(f[10])
    if corpus not in corpora:
        corpora.append(corpus)
    fps = (done / wall) if status == "cap" else files / wall
    runs[(corpus, plabel, tool)].append((fps, status))


def fps(corpus, plabel, tool):
    r = runs.get((corpus, plabel, tool))
    if not r:
        return None, ""
    v = statistics.median(x for x, _ in r)
    st = {s for _, s in r}
    mark = "~" if "cap" in st else ""
    if tool in ("nfsync", "nfsync-mount") and st - {"ok", "cap"}:
        mark += "†"  # a run failed its check
    return v, mark


def num(v, mark=""):
    return "n/a" if v is None else f"{mark}{v:,.0f}"


def ratio_cell(v, target, fmt):
    if v is None:
        return "n/a"
    ok = "**pass**" if v >= target else "**FAIL**"
    return f"{fmt.format(v)} {ok}"


hdr = ["corpus", "path"] + [f"{p} files/s" for p in presets]
hdr += ["efs ÷ 0 ms (≥ 0.8)", "serial nfs-cp @ efs", "÷ serial nfs-cp @ efs (≥ 50×)",
        "parallel -j nfs-cp @ efs"]
out = ["## Summary (issue 4)", "",
       "| " + " | ".join(hdr) + " |",
       "|" + "|".join(["---", "---"] + ["---:"] * (len(hdr) - 2)) + "|"]
for c in corpora:
    for path, prefix, tool in (("nfsync nfs://", "nfs-", "nfsync"),
                               ("nfsync mount path (latency FUSE)", "mount-", "nfsync-mount")):
        cells = [c, path]
        vals = {}
        for p in presets:
            v, m = fps(c, prefix + p, tool)
            vals[p] = v
            cells.append(num(v, m))
        r = vals.get("efs") / vals["0"] if vals.get("efs") and vals.get("0") else None
        cells.append(ratio_cell(r, 0.8, "{:.2f}"))
        if tool == "nfsync":
            cp, cm = fps(c, "nfs-efs", "nfs-cp")
            pp, pm = fps(c, "nfs-efs", "parallel-nfs-cp")
            x = vals.get("efs") / cp if vals.get("efs") and cp else None
            cells += [num(cp, cm), ratio_cell(x, 50, "{:.0f}×"), num(pp, pm)]
        else:
            cells += ["", "", ""]
        out.append("| " + " | ".join(cells) + " |")
out += ["",
        "files/s = files ÷ median wall of the reps (nfsync 3 reps at default options, "
        "`--jobs auto`). Preset = RTT per NFS call (proxy one-way delay = preset/2) or delay "
        "per FUSE request on the mount path: 0, lan 0.3 ms, efs 1.5 ms, wan 10 ms. "
        "Preset 0 still goes through `rig proxy` (with `--delay 0`), so all presets pay the same "
        "extra TCP hop. `~` = capped run, files/s = files present at the cap ÷ cap "
        "(serial nfs-cp: one capped run). † = a run failed its check. "
        "Checks: nfsync nfs:// with `rsync -anciH --delete --omit-link-times` "
        "(ganesha's VFS backend does not store symlink mtimes; same check as "
        "tests/nfs_ganesha.rs), the mount path with `rsync -anciH --delete` on the backing dir; "
        "nfs-cp copies file data only (dirs pre-created, no metadata) and is a data-path "
        "baseline, its check is expected to fail.", ""]

text = open(md).read().replace(
    "so one `.L..t` line per symlink is expected.",
    "so nfsync's NFS check adds `--omit-link-times`. Tables named `mount-PRESET` are nfsync "
    "on the latency FUSE mount at the same per-request delay (`rig mount --delay`, 0 = no delay).")
lines = text.split("\n")
# insert after the Command line (first blank line after it)
idx = next((i for i, l in enumerate(lines) if l.startswith("Command:")), 0)
lines[idx + 1:idx + 1] = [""] + out
open(md, "w").write("\n".join(lines))
