//! `rig report run`: the runner's raw results (one TSV line per tool run)
//! as markdown tables and an SVG chart.
//!
//! Raw columns (tab-separated, header line starting with `corpus`):
//! corpus preset tool setting n rep wall_s status files bytes done_files ops diffs
//! [inflight [cpu_s]]
//! `status` is ok, fail (the rsync -anciH check printed `diffs` lines) or cap
//! (killed at `wall_s` = the time cap after `done_files` files). `ops` is FUSE
//! requests on the mount path and NFS calls (`--json` rpcs) on `nfs-` presets;
//! `cpu_s` is nfsync's user + system seconds (run-nfs's nfs:// rows; 0 or
//! missing = not measured).
//!
//! nfsync's rows: `nfsync` (benches/run), and from benches/run-nfs
//! `nfsync-v41`, `nfsync-v3` (named `nfsync` in raw files from before the
//! NFSv4.1 rows: read as `nfsync-v3`) and `nfsync-mount`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{distinct, grouped, median};

/// One raw line (also read by `nfs`).
#[derive(Clone, Debug)]
pub struct Run {
    pub corpus: String,
    pub preset: String,
    pub tool: String,
    setting: String,
    n: u32,
    pub wall: f64,
    pub status: String,
    pub files: f64,
    bytes: f64,
    /// Files present when a capped run was killed.
    pub done: f64,
    /// FUSE requests (mount path) or NFS calls (`--json`'s rpcs, nfs:// rows).
    pub ops: f64,
    diffs: u64,
    /// Most FUSE requests queued or running at once (0 = unknown).
    inflight: f64,
    /// Client CPU seconds, user + system (0 = not measured; older raw files).
    pub cpu: f64,
}

/// One table row: a tool at its best setting on one corpus and preset.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub corpus: String,
    pub preset: String,
    pub tool: String,
    pub setting: String,
    /// Median wall seconds; for capped runs the extrapolated time.
    pub wall: f64,
    pub capped: bool,
    pub cap: f64,
    /// Files in the corpus.
    pub files: f64,
    pub files_s: f64,
    pub mb_s: f64,
    pub ops_per_file: f64,
    pub inflight: f64,
    pub check: String,
    pub sweep: String,
    pub reps: usize,
}

/// The tool of a raw row: `nfsync` on an `nfs-` preset is the NFSv3 row of
/// a raw file from before the NFSv4.1 rows.
pub fn tool_name(preset: &str, tool: &str) -> String {
    if tool == "nfsync" && preset.starts_with("nfs-") {
        "nfsync-v3".to_string()
    } else {
        tool.to_string()
    }
}

/// nfsync itself (any path or version), not a peer.
pub fn is_nfsync(tool: &str) -> bool {
    tool == "nfsync" || tool.starts_with("nfsync-")
}

/// The row other tools are compared with ("vs nfsync"): `nfsync`, or on
/// the NFS wire the NFSv3 row.
fn is_reference(tool: &str) -> bool {
    tool == "nfsync" || tool == "nfsync-v3"
}

pub fn parse(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 13 || f[0] == "corpus" {
            continue;
        }
        let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
        out.push(Run {
            corpus: f[0].into(),
            preset: f[1].into(),
            tool: tool_name(f[1], f[2]),
            setting: f[3].into(),
            n: f[4].parse().unwrap_or(0),
            wall: num(f[6]),
            status: f[7].into(),
            files: num(f[8]),
            bytes: num(f[9]),
            done: num(f[10]),
            ops: num(f[11]),
            diffs: f[12].parse().unwrap_or(0),
            inflight: f.get(13).map_or(0.0, |s| num(s)),
            cpu: f.get(14).map_or(0.0, |s| num(s)),
        });
    }
    out
}

/// FUSE ops of complete runs, per (corpus, tool): what a capped run of the
/// same tool would have needed in total.
type FullOps = BTreeMap<(String, String), f64>;

fn full_ops(runs: &[Run]) -> FullOps {
    let mut per: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.status != "cap" && r.ops > 0.0) {
        per.entry((r.corpus.clone(), r.tool.clone()))
            .or_default()
            .push(r.ops);
    }
    per.into_iter().map(|(k, v)| (k, median(v))).collect()
}

/// Effective wall time of a run: measured, or extrapolated when capped.
/// A serial copy's time is proportional to its round trips, so a capped run
/// is extrapolated by FUSE ops (ops a complete run of the same tool needed,
/// at another preset, ÷ ops done within the cap); by files copied when no
/// complete run exists. Files-based extrapolation is pessimistic for tools
/// that create all directories first (rsync).
fn effective_wall(r: &Run, full: &FullOps) -> f64 {
    if r.status != "cap" {
        return r.wall;
    }
    match full.get(&(r.corpus.clone(), r.tool.clone())) {
        Some(&total) if r.ops > 0.0 => r.wall * total.max(r.ops) / r.ops,
        _ if r.done > 0.0 => r.wall * r.files / r.done,
        _ => f64::INFINITY,
    }
}

pub fn rows(text: &str) -> Vec<Row> {
    let runs = parse(text);
    let full = full_ops(&runs);
    // (corpus, preset, tool) -> n -> runs; BTreeMap keeps output stable.
    let mut groups: BTreeMap<(String, String, String), BTreeMap<u32, Vec<Run>>> = BTreeMap::new();
    let mut order: Vec<(String, String, String)> = Vec::new();
    for r in runs {
        let key = (r.corpus.clone(), r.preset.clone(), r.tool.clone());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups
            .entry(key)
            .or_default()
            .entry(r.n)
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let by_n = &groups[&key];
        let med = |rs: &Vec<Run>| median(rs.iter().map(|r| effective_wall(r, &full)).collect());
        // The runner repeats only the sweep winner, so the N with the most
        // runs is the winner; ties (no reps) go to the fastest.
        let (&best_n, best) = by_n
            .iter()
            .min_by(|a, b| {
                b.1.len()
                    .cmp(&a.1.len())
                    .then(med(a.1).total_cmp(&med(b.1)))
            })
            .expect("non-empty group");
        let wall = med(best);
        let first = &best[0];
        let capped = best.iter().any(|r| r.status == "cap");
        let fails: Vec<&Run> = best.iter().filter(|r| r.status != "ok").collect();
        let check = if capped {
            "not checked (capped)".to_string()
        } else if fails.is_empty() {
            "ok".to_string()
        } else if let Some(r) = fails.iter().find(|r| r.status.starts_with("rc")) {
            format!("FAIL (exit {})", &r.status[2..])
        } else {
            let worst = fails.iter().map(|r| r.diffs).max().unwrap_or(0);
            format!("FAIL ({worst} diff lines)")
        };
        let sweep = if by_n.len() > 1 {
            by_n.iter()
                .map(|(n, rs)| {
                    let capped = rs.iter().any(|r| r.status == "cap");
                    format!("{n}:{}{:.1}s", if capped { "~" } else { "" }, med(rs))
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            String::new()
        };
        // Capped runs did not finish: show the complete runs' ops per file.
        let ops = if capped {
            full.get(&(key.0.clone(), key.2.clone()))
                .map_or(f64::NAN, |t| t / first.files.max(1.0))
        } else {
            median(
                best.iter()
                    .filter(|r| r.ops > 0.0)
                    .map(|r| r.ops / r.files.max(1.0))
                    .collect(),
            )
        };
        out.push(Row {
            corpus: key.0,
            preset: key.1,
            tool: key.2,
            setting: if best_n > 0 {
                first.setting.replace("{N}", &best_n.to_string())
            } else {
                first.setting.clone()
            },
            wall,
            capped,
            cap: best
                .iter()
                .filter(|r| r.status == "cap")
                .map(|r| r.wall)
                .fold(0.0, f64::max),
            files: first.files,
            files_s: first.files / wall,
            mb_s: first.bytes / wall / 1e6,
            ops_per_file: ops,
            inflight: median(best.iter().map(|r| r.inflight).collect()),
            check,
            sweep,
            reps: best.len(),
        });
    }
    out
}

/// Markdown report: the command, `summary` if any (run-nfs's), the machine
/// description, then one table per corpus/preset.
pub fn markdown(rows: &[Row], machine: &str, cmdline: &str, summary: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# nfsync benchmark results\n");
    let _ = writeln!(s, "Command: `{cmdline}`\n");
    if let Some(summary) = summary {
        s.push_str(summary);
    }
    let _ = writeln!(s, "Machine:\n\n```\n{}\n```\n", machine.trim());
    let _ = writeln!(
        s,
        "Destination: the latency FUSE mount (`rig mount --delay PRESET`, every FUSE request delayed; \
         {presets}). Source: local disk. Wall = median of the reps at the best \
         N of the sweep. `>` marks runs killed at the time cap; their wall time is extrapolated \
         from the FUSE ops done within the cap vs the ops a complete run of the same tool needed \
         at another preset (serial copies take time in proportion to round trips), and their \
         files/s and ratio (marked ~) follow from that estimate. vs nfsync = tool wall / nfsync wall (how many times \
         longer than nfsync). ops/file = FUSE requests per file (all kinds); in flight = most FUSE requests queued or \
         being served at once (median over the reps), i.e. how much latency the tool overlaps. Check = \
         `rsync -anciH --delete SRC/ DEST/` on the backing dir printing nothing. In the sweep \
         column `~` marks an N whose run hit the cap (extrapolated). Tables named `nfs-PRESET` \
         are the NFS-wire mode instead: nfsync over NFSv4.1 (`nfsync-v41`) and NFSv3 \
         (`nfsync-v3`, the reference of vs nfsync there) and libnfs nfs-cp to a local \
         nfs-ganesha through `rig proxy` with RTT = the preset's delay (benches/run-nfs); \
         ops/file there = NFS calls per file (nfsync's `--json` rpcs), and ganesha's VFS \
         backend does not store symlink mtimes, so nfsync's NFS check adds `--omit-link-times`. \
         Tables named `mount-PRESET` are nfsync on the latency FUSE mount at the same per-request \
         delay (`rig mount --delay`, 0 = no delay).\n",
        presets = crate::preset::text()
    );
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.corpus.clone(), r.preset.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (corpus, preset) in keys {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| r.corpus == corpus && r.preset == preset)
            .collect();
        let nfsync = group.iter().find(|r| is_reference(&r.tool)).map(|r| r.wall);
        let _ = writeln!(s, "## {corpus} @ {preset}\n");
        let _ = writeln!(
            s,
            "| tool | settings | wall s | files/s | MB/s | vs nfsync | ops/file | in flight | check | reps | sweep (N:wall) |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|");
        for r in group {
            let wall = if r.capped {
                format!("> {:.0} (≈{:.0} extrap.)", r.cap, r.wall)
            } else {
                format!("{:.2}", r.wall)
            };
            let tilde = if r.capped { "~" } else { "" };
            let ratio = match nfsync {
                Some(n) if n > 0.0 && r.wall.is_finite() => format!("{tilde}{:.2}×", r.wall / n),
                _ => "n/a".into(),
            };
            let ops = if r.ops_per_file.is_finite() {
                format!("{:.1}", r.ops_per_file)
            } else {
                "n/a".into()
            };
            let inflight = if r.inflight > 0.0 {
                format!("{:.0}", r.inflight)
            } else {
                "n/a".into()
            };
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {tilde}{:.0} | {tilde}{:.1} | {} | {} | {} | {} | {} | {} |",
                r.tool,
                r.setting.replace('|', "\\|"),
                wall,
                r.files_s,
                r.mb_s,
                ratio,
                ops,
                inflight,
                r.check,
                r.reps,
                r.sweep
            );
        }
        let _ = writeln!(s);
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The title of the run chart (`latest.svg`).
pub const CHART_TITLE: &str =
    "files/s onto the latency mount (log scale; red = nfsync, grey = capped)";

/// Horizontal bar chart of files/s (log scale), one panel per corpus/preset.
pub fn svg(rows: &[Row], title: &str) -> String {
    let label_w = 150.0;
    let bar_w = 520.0;
    let bar_h = 16.0;
    let gap = 4.0;
    let max = rows
        .iter()
        .map(|r| r.files_s)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let min = rows
        .iter()
        .map(|r| r.files_s)
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(max, f64::min)
        .max(1.0);
    let lo = 10f64.powf(min.log10().floor());
    let hi = 10f64.powf(max.log10().ceil().max(lo.log10() + 1.0));
    let x =
        |v: f64| label_w + bar_w * ((v.max(lo)).log10() - lo.log10()) / (hi.log10() - lo.log10());
    let mut body = String::new();
    let mut y = 40.0;
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.corpus.clone(), r.preset.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (corpus, preset) in &keys {
        let _ = writeln!(
            body,
            r#"<text x="4" y="{:.0}" font-weight="bold">{} @ {}</text>"#,
            y + 12.0,
            esc(corpus),
            esc(preset)
        );
        y += 20.0;
        for r in rows
            .iter()
            .filter(|r| &r.corpus == corpus && &r.preset == preset)
        {
            let color = if is_nfsync(&r.tool) {
                "#d62728"
            } else if r.capped {
                "#bbbbbb"
            } else {
                "#1f77b4"
            };
            let w = (x(r.files_s) - label_w).max(1.0);
            let mark = if r.capped {
                " (capped, extrapolated)"
            } else if r.check.starts_with("FAIL") {
                " (check FAIL)"
            } else {
                ""
            };
            let _ = writeln!(
                body,
                "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\
                 <rect x=\"{label_w:.0}\" y=\"{y:.0}\" width=\"{w:.1}\" height=\"{bar_h:.0}\" fill=\"{color}\"/>\
                 <text x=\"{:.1}\" y=\"{:.0}\">{:.0}{}</text>",
                label_w - 6.0,
                y + 12.0,
                esc(&r.tool),
                label_w + w + 4.0,
                y + 12.0,
                r.files_s,
                mark
            );
            y += bar_h + gap;
        }
        y += 10.0;
    }
    // Log-scale grid.
    let mut grid = String::new();
    let mut v = lo;
    while v <= hi * 1.0001 {
        let gx = x(v);
        let _ = writeln!(
            grid,
            "<line x1=\"{gx:.1}\" y1=\"32\" x2=\"{gx:.1}\" y2=\"{:.0}\" stroke=\"#ddd\"/>\
             <text x=\"{gx:.1}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#666\">{v}</text>",
            y,
            y + 14.0
        );
        v *= 10.0;
    }
    let height = y + 24.0;
    let width = label_w + bar_w + 120.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"4\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>\n{grid}{body}</svg>\n",
        esc(title)
    )
}

/// The presets of the rows, in order.
pub fn presets(rows: &[Row]) -> String {
    distinct(rows.iter().map(|r| r.preset.as_str())).join(",")
}

/// The history line's figures: per corpus and preset, nfsync's files/s and
/// the fastest other tool whose copy passed the check.
pub fn figures(rows: &[Row]) -> String {
    let fps = |r: &Row| {
        format!(
            "{}{}",
            if r.capped { "~" } else { "" },
            grouped(r.files_s, 0)
        )
    };
    let mut out = Vec::new();
    for corpus in distinct(rows.iter().map(|r| r.corpus.as_str())) {
        let of_corpus: Vec<&Row> = rows.iter().filter(|r| r.corpus == corpus).collect();
        let mut cells = Vec::new();
        for preset in distinct(of_corpus.iter().map(|r| r.preset.as_str())) {
            let group: Vec<&Row> = of_corpus
                .iter()
                .copied()
                .filter(|r| r.preset == preset)
                .collect();
            let mut cell = preset.clone();
            // nfsync-v41, nfsync-v3, nfsync-mount: run-nfs's rows of nfsync over
            // NFSv4.1, NFSv3 and on the latency mount (run --nfs).
            for n in group.iter().filter(|r| is_nfsync(&r.tool)) {
                let _ = write!(cell, " {} {}", n.tool, fps(n));
                if n.check.starts_with("FAIL") {
                    cell.push_str(" (check FAIL)");
                }
            }
            let peer = group
                .iter()
                .filter(|r| !is_nfsync(&r.tool) && r.check == "ok")
                .max_by(|a, b| a.files_s.total_cmp(&b.files_s));
            if let Some(p) = peer {
                let _ = write!(cell, " (best exact peer: {} {})", p.tool, fps(p));
            }
            cells.push(cell);
        }
        let files = of_corpus.first().map_or(0.0, |r| r.files);
        out.push(format!(
            "{corpus} {} files: {}",
            grouped(files, 0),
            cells.join("; ")
        ));
    }
    out.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs
c\tlan\tcp\tcp -a\t0\t1\t10\tok\t100\t1000\t0\t800\t0
c\twan\tcp\tcp -a\t0\t1\t30\tcap\t100\t1000\t20\t200\t0
c\twan\tx\tx -j {N}\t8\t1\t9\tok\t100\t1000\t0\t900\t0
c\twan\tx\tx -j {N}\t32\t1\t5\tok\t100\t1000\t0\t900\t0
c\twan\tx\tx -j {N}\t32\t2\t7\tfail\t100\t1000\t0\t900\t3
c\twan\tx\tx -j {N}\t32\t3\t6\tok\t100\t1000\t0\t900\t0
";

    #[test]
    fn capped_runs_extrapolate_by_ops() {
        let rows = rows(RAW);
        let cp = rows
            .iter()
            .find(|r| r.preset == "wan" && r.tool == "cp")
            .unwrap();
        assert!(cp.capped);
        // 200 of the 800 ops a complete run needs took 30 s.
        assert!((cp.wall - 120.0).abs() < 1e-9);
        assert_eq!(cp.cap, 30.0);
    }

    #[test]
    fn sweep_winner_is_the_repeated_n() {
        let rows = rows(RAW);
        let x = rows.iter().find(|r| r.tool == "x").unwrap();
        assert_eq!(x.setting, "x -j 32");
        assert_eq!(x.wall, 6.0);
        assert_eq!(x.reps, 3);
        assert!(x.check.starts_with("FAIL (3"));
    }

    #[test]
    fn figures_name_the_fastest_exact_peer() {
        let raw = format!("{RAW}c\tlan\tnfsync\tnfsync\t0\t1\t0.05\tok\t100\t1000\t0\t700\t0\n");
        assert_eq!(
            figures(&rows(&raw)),
            "c 100 files: lan nfsync 2,000 (best exact peer: cp 10); wan"
        );
    }

    #[test]
    fn nfs_rows_are_nfsync_not_peers_and_old_v3_name_is_read() {
        let raw = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs\tinflight\tcpu_s
c\tnfs-efs\tnfsync-v41\ts\t0\t1\t0.5\tok\t100\t1000\t0\t101\t0\t0\t0.02
c\tnfs-efs\tnfsync\ts\t0\t1\t1\tok\t100\t1000\t0\t301\t0\t0
c\tnfs-efs\tnfs-cp\ts\t0\t1\t10\tok\t100\t1000\t0\t0\t0\t0\t0
";
        let rows = rows(raw);
        assert_eq!(rows[1].tool, "nfsync-v3");
        assert_eq!(
            figures(&rows),
            "c 100 files: nfs-efs nfsync-v41 200 nfsync-v3 100 (best exact peer: nfs-cp 10)"
        );
        // vs nfsync: against the NFSv3 row.
        let md = markdown(&rows, "", "x", None);
        assert!(
            md.contains("| nfsync-v41 | `s` | 0.50 | 200 | 0.0 | 0.50× | 1.0 |"),
            "{md}"
        );
    }
}
