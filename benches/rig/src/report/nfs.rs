//! `rig report nfs`: the summary that heads benches/run-nfs's report
//! (issue 4's figures): nfsync's files/s per preset over nfs:// and on the
//! latency mount, efs against 0 ms, and against libnfs `nfs-cp`.
//!
//! Rows of the raw TSV used here: preset `nfs-P` (tools `nfsync-v41`, `nfsync-v3`,
//! `nfs-cp`, `parallel-nfs-cp`) and `mount-P` (tool `nfsync-mount`). Raw files
//! written before the NFSv4.1 rows name the NFSv3 row `nfsync` (and have no
//! `cpu_s` column): `run::parse` reads it as `nfsync-v3`. The NFSv4.1 section compares the three
//! nfsync paths at each RTT (issue 14's targets), with the calls (`ops` column:
//! `--json` rpcs) and client CPU (`cpu_s`) per file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{distinct, grouped, median};

pub struct Summary {
    presets: Vec<String>,
    corpora: Vec<String>,
    /// Files per corpus.
    files: BTreeMap<String, f64>,
    /// (corpus, preset label, tool) -> (files/s, status) per run.
    runs: BTreeMap<(String, String, String), Vec<(f64, String)>>,
    /// (corpus, preset label, tool) -> (calls, CPU seconds) per complete run.
    cost: BTreeMap<(String, String, String), Vec<(f64, f64)>>,
}

const V41: &str = "nfsync-v41";
const V3: &str = "nfsync-v3";
const MOUNT: &str = "nfsync-mount";

/// The paths of a corpus: label, preset prefix, tool.
const PATHS: [(&str, &str, &str); 3] = [
    ("nfsync nfs:// NFSv4.1", "nfs-", V41),
    ("nfsync nfs:// NFSv3", "nfs-", V3),
    ("nfsync mount path (latency FUSE)", "mount-", MOUNT),
];

/// Issue 14's targets for a corpus at the efs RTT: v4.1 ÷ mount (5× on
/// efs-blog, 2× elsewhere), and whether every file of the corpus is a new
/// small file, so that v4.1 should send one call per file (efs-blog: 64 KiB
/// files in one directory; node_modules also has directories and big files).
fn targets_of(corpus: &str) -> (f64, bool) {
    if corpus.starts_with("efs-blog") {
        (5.0, true)
    } else {
        (2.0, false)
    }
}

/// Calls a run may spend besides one per new small file: the session
/// (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, DESTROY_*), the path's
/// LOOKUPs, the destination directory and its final SETATTR, the idle
/// SEQUENCEs (as in tests/it/nfs4.rs: at most N + 20 for N new files).
const CALLS_FIXED: f64 = 20.0;

impl Summary {
    /// `presets` in column order; empty = those of the raw TSV, in order.
    pub fn new(raw: &str, presets: Vec<String>) -> Summary {
        let mut s = Summary {
            presets,
            corpora: Vec::new(),
            files: BTreeMap::new(),
            runs: BTreeMap::new(),
            cost: BTreeMap::new(),
        };
        let mut labels = Vec::new();
        for r in super::run::parse(raw) {
            let fps = if r.status == "cap" {
                r.done / r.wall
            } else {
                r.files / r.wall
            };
            if !s.corpora.contains(&r.corpus) {
                s.corpora.push(r.corpus.clone());
            }
            s.files.insert(r.corpus.clone(), r.files);
            labels.push(r.preset.clone());
            if r.status != "cap" && r.ops > 0.0 {
                s.cost
                    .entry((r.corpus.clone(), r.preset.clone(), r.tool.clone()))
                    .or_default()
                    .push((r.ops, r.cpu));
            }
            s.runs
                .entry((r.corpus, r.preset, r.tool))
                .or_default()
                .push((fps, r.status));
        }
        if s.presets.is_empty() {
            s.presets = distinct(
                labels
                    .iter()
                    .filter_map(|l| l.strip_prefix("nfs-").or_else(|| l.strip_prefix("mount-"))),
            );
        }
        s
    }

    /// Median files/s of a tool's runs and its mark: `~` if a run was
    /// capped, `†` if one of nfsync's runs failed its check.
    fn fps(&self, corpus: &str, label: &str, tool: &str) -> (Option<f64>, String) {
        let Some(r) = self.runs.get(&(corpus.into(), label.into(), tool.into())) else {
            return (None, String::new());
        };
        let v = median(r.iter().map(|x| x.0).collect());
        let mut mark = String::new();
        if r.iter().any(|x| x.1 == "cap") {
            mark.push('~');
        }
        if matches!(tool, V41 | V3 | MOUNT) && r.iter().any(|x| x.1 != "ok" && x.1 != "cap") {
            mark.push('†');
        }
        (Some(v), mark)
    }

    /// nfsync's files/s per preset on one path, efs ÷ 0 ms, and (nfs:// only)
    /// the nfs-cp baselines at efs: serial, nfsync ÷ serial, parallel.
    fn path_figures(&self, corpus: &str, prefix: &str, tool: &str) -> PathFigures {
        let per_preset: Vec<(Option<f64>, String)> = self
            .presets
            .iter()
            .map(|p| self.fps(corpus, &format!("{prefix}{p}"), tool))
            .collect();
        let at = |p: &str| {
            self.presets
                .iter()
                .position(|x| x == p)
                .and_then(|i| per_preset[i].0)
                .filter(|v| *v != 0.0)
        };
        let efs_over_0 = at("efs").zip(at("0")).map(|(e, z)| e / z);
        let (serial, parallel) = if tool.starts_with("nfsync") && prefix == "nfs-" {
            (
                self.fps(corpus, "nfs-efs", "nfs-cp"),
                self.fps(corpus, "nfs-efs", "parallel-nfs-cp"),
            )
        } else {
            ((None, String::new()), (None, String::new()))
        };
        let over_serial = at("efs")
            .zip(serial.0.filter(|v| *v != 0.0))
            .map(|(e, s)| e / s);
        PathFigures {
            per_preset,
            efs_over_0,
            serial,
            over_serial,
            parallel,
        }
    }

    /// The presets of the columns.
    pub fn presets(&self) -> String {
        self.presets.join(",")
    }

    /// The "## Summary" section.
    pub fn markdown(&self) -> String {
        let mut hdr: Vec<String> = vec!["corpus".into(), "path".into()];
        hdr.extend(self.presets.iter().map(|p| format!("{p} files/s")));
        hdr.extend(
            [
                "efs ÷ 0 ms (≥ 0.8)",
                "serial nfs-cp @ efs",
                "÷ serial nfs-cp @ efs (≥ 50×)",
                "parallel -j nfs-cp @ efs",
            ]
            .map(String::from),
        );
        let mut s = String::from("## Summary (issue 4)\n\n");
        let _ = writeln!(s, "| {} |", hdr.join(" | "));
        let _ = writeln!(s, "|---|---|{}", "---:|".repeat(hdr.len() - 2));
        for corpus in &self.corpora {
            for (label, prefix, tool) in PATHS {
                let f = self.path_figures(corpus, prefix, tool);
                let mut cells = vec![corpus.clone(), label.to_string()];
                cells.extend(f.per_preset.iter().map(|(v, m)| num(*v, m)));
                cells.push(verdict(
                    f.efs_over_0,
                    0.8,
                    format!("{:.2}", f.efs_over_0.unwrap_or(0.0)),
                ));
                if prefix == "nfs-" {
                    cells.push(num(f.serial.0, &f.serial.1));
                    cells.push(verdict(
                        f.over_serial,
                        50.0,
                        format!("{:.0}×", f.over_serial.unwrap_or(0.0)),
                    ));
                    cells.push(num(f.parallel.0, &f.parallel.1));
                } else {
                    cells.extend([String::new(), String::new(), String::new()]);
                }
                let _ = writeln!(s, "| {} |", cells.join(" | "));
            }
        }
        let _ = write!(
            s,
            "\nfiles/s = files ÷ median wall of the reps (nfsync at default options, \
             `--jobs auto`). Preset = RTT per NFS call (proxy one-way delay = preset/2) or delay \
             per FUSE request on the mount path: 0, {presets}. \
             Preset 0 still goes through `rig proxy` (with `--delay 0`), so all presets pay the same \
             extra TCP hop. `~` = capped run, files/s = files present at the cap ÷ cap \
             (serial nfs-cp: one capped run). † = a run failed its check. \
             Checks: nfsync nfs:// with `rsync -anciH --delete --omit-link-times` \
             (ganesha's VFS backend does not store symlink mtimes; same check as \
             tests/it/ganesha.rs), the mount path with `rsync -anciH --delete` on the backing dir; \
             nfs-cp copies file data only (dirs pre-created, no metadata) and is a data-path \
             baseline, its check is expected to fail.\n\n",
            presets = crate::preset::text()
        );
        s
    }

    /// Median (calls, CPU ms) per file of a tool's complete runs.
    fn per_file(&self, corpus: &str, label: &str, tool: &str) -> Option<(f64, f64)> {
        let c = self.cost.get(&(corpus.into(), label.into(), tool.into()))?;
        let files = *self.files.get(corpus)?;
        if files == 0.0 {
            return None;
        }
        let calls = median(c.iter().map(|x| x.0).collect()) / files;
        let cpu = median(c.iter().map(|x| x.1).collect()) * 1000.0 / files;
        Some((calls, cpu))
    }

    /// The "## NFSv4.1" section: v4.1 against v3 and the mount path at each RTT, what
    /// a file costs in calls and CPU, and issue 14's targets. `machine`'s `load:` line
    /// is repeated under the table.
    pub fn v41_markdown(&self, machine: &str) -> String {
        let mut s = String::from("## NFSv4.1 against NFSv3 and the mount path (issue 14)\n\n");
        s.push_str(
            "| corpus | RTT | v4.1 files/s | v3 files/s | mount files/s | v4.1 ÷ v3 | v4.1 ÷ mount \
             | v4.1 ÷ its 0 ms | calls/file v4.1 · v3 | CPU ms/file v4.1 · v3 |\n",
        );
        s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let ratio =
            |a: Option<f64>, b: Option<f64>| a.zip(b.filter(|b| *b > 0.0)).map(|(a, b)| a / b);
        let shown = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        let mut targets = Vec::new();
        for corpus in &self.corpora {
            let (over_mount, one_call) = targets_of(corpus);
            let files = self.files.get(corpus).copied().unwrap_or(0.0);
            let zero = self.fps(corpus, "nfs-0", V41).0;
            // v4.1's calls per file at each RTT (complete runs), for the one-call target.
            let mut calls41 = Vec::new();
            for p in &self.presets {
                let nfs = format!("nfs-{p}");
                let (v4, m4) = self.fps(corpus, &nfs, V41);
                let (v3, m3) = self.fps(corpus, &nfs, V3);
                let (mt, mm) = self.fps(corpus, &format!("mount-{p}"), MOUNT);
                let c41 = self.per_file(corpus, &nfs, V41);
                let c3 = self.per_file(corpus, &nfs, V3);
                if let Some((c, _)) = c41 {
                    calls41.push((p.clone(), c));
                }
                let calls =
                    |c: Option<(f64, f64)>| c.map_or("n/a".to_string(), |(c, _)| format!("{c:.2}"));
                let cpu =
                    |c: Option<(f64, f64)>| c.map_or("n/a".to_string(), |(_, c)| format!("{c:.3}"));
                let _ = writeln!(
                    s,
                    "| {corpus} | {p} | {} | {} | {} | {} | {} | {} | {} · {} | {} · {} |",
                    num(v4, &m4),
                    num(v3, &m3),
                    num(mt, &mm),
                    shown(ratio(v4, v3)),
                    shown(ratio(v4, mt)),
                    shown(ratio(v4, zero)),
                    calls(c41),
                    calls(c3),
                    cpu(c41),
                    cpu(c3),
                );
                if p == "efs" {
                    targets.push(check(
                        format!("{corpus}: v4.1 at efs ÷ v4.1 at 0 ms"),
                        ratio(v4, zero),
                        0.9,
                    ));
                    targets.push(check(
                        format!("{corpus}: v4.1 ÷ v3 at efs"),
                        ratio(v4, v3),
                        1.0,
                    ));
                    targets.push(check(
                        format!("{corpus}: v4.1 ÷ mount at efs"),
                        ratio(v4, mt),
                        over_mount,
                    ));
                }
            }
            if one_call && files > 0.0 {
                // One COMPOUND per new small file, plus at most CALLS_FIXED per run.
                let limit = 1.0 + CALLS_FIXED / files;
                let worst = calls41.iter().max_by(|a, b| a.1.total_cmp(&b.1));
                targets.push(match worst {
                    Some((p, c)) => format!(
                        "{corpus}: v4.1 calls per new small file = {c:.3} at worst ({p}; every file \
                         of this corpus is new and small; target one per file + ≤ {CALLS_FIXED:.0} \
                         per run = ≤ {limit:.3}): {}",
                        if *c <= limit { "met" } else { "NOT met" }
                    ),
                    None => format!("{corpus}: v4.1 calls per new small file = n/a: NOT met"),
                });
            }
        }
        s.push_str(
            "\nSame runs as the summary (medians of the reps). calls/file = `--json` rpcs \
             (NFSv4.1 COMPOUNDs, NFSv3 procedures, retries included) ÷ files in the corpus, \
             directories and big files included; CPU = nfsync's user + system time \
             (`/usr/bin/time`, 10 ms resolution) ÷ files. The two versions run in alternating \
             order rep by rep (v4.1 v3, v3 v4.1, …).\n",
        );
        if let Some(load) = machine.lines().find_map(|l| l.trim().strip_prefix("load:")) {
            let _ = writeln!(s, "Load average: {}", load.trim());
        }
        s.push('\n');
        for t in targets {
            let _ = writeln!(s, "- {t}");
        }
        s.push('\n');
        s
    }

    /// The history line's figures: per corpus, nfsync's files/s per preset
    /// on each path, efs ÷ 0 ms and nfsync ÷ serial nfs-cp.
    pub fn figures(&self) -> String {
        let mut out = Vec::new();
        for corpus in &self.corpora {
            let mut parts = Vec::new();
            for (_, prefix, tool) in PATHS {
                let f = self.path_figures(corpus, prefix, tool);
                if f.per_preset.iter().all(|(v, _)| v.is_none()) {
                    continue;
                }
                let path = match tool {
                    V41 => "v4.1",
                    V3 => "v3",
                    _ => "mount",
                };
                let mut cell = format!(
                    "{path} {}",
                    self.presets
                        .iter()
                        .zip(&f.per_preset)
                        .map(|(p, (v, m))| format!("{p} {}", num(*v, m)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let mut extra = Vec::new();
                if let Some(r) = f.efs_over_0 {
                    extra.push(format!("efs÷0 {r:.2}"));
                }
                if let Some(x) = f.over_serial {
                    extra.push(format!("{x:.0}× serial nfs-cp"));
                }
                if !extra.is_empty() {
                    let _ = write!(cell, " ({})", extra.join(", "));
                }
                parts.push(cell);
            }
            let files = self.files.get(corpus).copied().unwrap_or(0.0);
            out.push(format!(
                "{corpus} {} files: {}",
                grouped(files, 0),
                parts.join("; ")
            ));
        }
        out.join(" · ")
    }
}

struct PathFigures {
    per_preset: Vec<(Option<f64>, String)>,
    efs_over_0: Option<f64>,
    serial: (Option<f64>, String),
    over_serial: Option<f64>,
    parallel: (Option<f64>, String),
}

fn num(v: Option<f64>, mark: &str) -> String {
    v.map_or("n/a".into(), |v| format!("{mark}{}", grouped(v, 0)))
}

/// One target line: `NAME = V (target ≥ T): met` or `NOT met`.
fn check(name: String, v: Option<f64>, target: f64) -> String {
    let shown = v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
    let met = v.is_some_and(|v| v >= target);
    format!(
        "{name} = {shown} (target ≥ {target}): {}",
        if met { "met" } else { "NOT met" }
    )
}

fn verdict(v: Option<f64>, target: f64, shown: String) -> String {
    match v {
        None => "n/a".into(),
        Some(v) if v >= target => format!("{shown} **pass**"),
        Some(_) => format!("{shown} **FAIL**"),
    }
}

#[cfg(test)]
mod tests {
    use super::Summary;

    const RAW: &str = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs\tinflight
c\tnfs-0\tnfsync\ts\t0\t1\t1\tok\t1000\t1\t0\t0\t0\t0
c\tnfs-0\tnfs-cp\ts\t0\t1\t10\tcap\t1000\t1\t100\t0\t0\t0
c\tnfs-efs\tnfsync\ts\t0\t1\t2\tok\t1000\t1\t0\t0\t0\t0
c\tnfs-efs\tnfsync\ts\t0\t2\t4\tfail\t1000\t1\t0\t0\t3\t0
c\tnfs-efs\tnfs-cp\ts\t0\t1\t100\tcap\t1000\t1\t5\t0\t0\t0
c\tmount-0\tnfsync-mount\ts\t0\t1\t0.5\tok\t1000\t1\t0\t0\t0\t0
";

    #[test]
    fn summary_rows() {
        let s = Summary::new(RAW, Vec::new());
        assert_eq!(s.presets(), "0,efs");
        let md = s.markdown();
        // efs: median of 500 and 250 files/s; a failed run marks it †.
        assert!(
            md.contains(
                "| c | nfsync nfs:// NFSv3 | 1,000 | †375 | 0.38 **FAIL** | ~0 | 7500× **pass** | n/a |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| c | nfsync mount path (latency FUSE) | 2,000 | n/a | n/a |  |  |  |"),
            "{md}"
        );
        assert_eq!(
            s.figures(),
            "c 1,000 files: v3 0 1,000, efs †375 (efs÷0 0.38, 7500× serial nfs-cp); mount 0 2,000, efs n/a"
        );
    }

    #[test]
    fn v41_against_v3_and_mount_with_calls_and_cpu_per_file() {
        let raw = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs\tinflight\tcpu_s
efs-blog\tnfs-0\tnfsync-v41\ts\t0\t1\t1\tok\t1000\t1\t0\t1010\t0\t0\t0.5
efs-blog\tnfs-efs\tnfsync-v41\ts\t0\t1\t1.05\tok\t1000\t1\t0\t1010\t0\t0\t0.6
efs-blog\tnfs-efs\tnfsync-v3\ts\t0\t1\t2\tok\t1000\t1\t0\t3030\t0\t0\t1.2
efs-blog\tmount-efs\tnfsync-mount\ts\t0\t1\t10\tok\t1000\t1\t0\t0\t0\t0
";
        let s = Summary::new(raw, Vec::new());
        let md = s.v41_markdown("date: x\nload:    1.0 2.0 3.0 at start\n");
        assert!(
            md.contains("| efs-blog | efs | 952 | 500 | 100 | 1.90 | 9.52 | 0.95 | 1.01 · 3.03 | 0.600 · 1.200 |"),
            "{md}"
        );
        assert!(
            md.contains("v4.1 at efs ÷ v4.1 at 0 ms = 0.95 (target ≥ 0.9): met"),
            "{md}"
        );
        assert!(
            md.contains("v4.1 ÷ v3 at efs = 1.90 (target ≥ 1): met"),
            "{md}"
        );
        assert!(
            md.contains("v4.1 ÷ mount at efs = 9.52 (target ≥ 5): met"),
            "{md}"
        );
        // 1,010 calls for 1,000 new small files: within the 20 per run.
        assert!(
            md.contains("efs-blog: v4.1 calls per new small file = 1.010 at worst (efs; ")
                && md.contains("= ≤ 1.020): met"),
            "{md}"
        );
        assert!(md.contains("Load average: 1.0 2.0 3.0 at start\n"), "{md}");
    }

    /// A raw file from before the NFSv4.1 rows: NFSv3 is `nfsync`, no cpu_s.
    /// Rows named either way land in the v3 column; targets not reached say so.
    #[test]
    fn old_v3_name_and_targets_not_met() {
        let raw = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs\tinflight
node_modules\tnfs-0\tnfsync-v41\ts\t0\t1\t1\tok\t1000\t1\t0\t1100\t0\t0
node_modules\tnfs-efs\tnfsync-v41\ts\t0\t1\t2\tok\t1000\t1\t0\t1100\t0\t0
node_modules\tnfs-efs\tnfsync\ts\t0\t1\t1\tok\t1000\t1\t0\t3100\t0\t0
node_modules\tmount-efs\tnfsync-mount\ts\t0\t1\t1.5\tok\t1000\t1\t0\t0\t0\t0
efs-blog\tnfs-efs\tnfsync-v41\ts\t0\t1\t1\tok\t100\t1\t0\t300\t0\t0
";
        let s = Summary::new(raw, Vec::new());
        let md = s.v41_markdown("");
        assert!(
            md.contains("| node_modules | efs | 500 | 1,000 | 667 | 0.50 | 0.75 | 0.50 | 1.10 · 3.10 | 0.000 · 0.000 |"),
            "{md}"
        );
        assert!(
            md.contains("node_modules: v4.1 at efs ÷ v4.1 at 0 ms = 0.50 (target ≥ 0.9): NOT met"),
            "{md}"
        );
        assert!(
            md.contains("node_modules: v4.1 ÷ v3 at efs = 0.50 (target ≥ 1): NOT met"),
            "{md}"
        );
        assert!(
            md.contains("node_modules: v4.1 ÷ mount at efs = 0.75 (target ≥ 2): NOT met"),
            "{md}"
        );
        // node_modules has directories and big files: no one-call line for it.
        assert!(
            !md.contains("node_modules: v4.1 calls per new small file"),
            "{md}"
        );
        assert!(
            md.contains("efs-blog: v4.1 calls per new small file = 3.000 at worst (efs; "),
            "{md}"
        );
        assert!(md.contains("= ≤ 1.200): NOT met"), "{md}");
        assert!(
            md.contains("efs-blog: v4.1 ÷ v3 at efs = n/a (target ≥ 1): NOT met"),
            "{md}"
        );
        assert!(!md.contains("Load average"), "{md}");
        assert_eq!(
            s.figures(),
            "node_modules 1,000 files: v4.1 0 1,000, efs 500 (efs÷0 0.50); v3 0 n/a, efs 1,000; \
             mount 0 n/a, efs 667 · efs-blog 100 files: v4.1 0 n/a, efs 100"
        );
    }
}
