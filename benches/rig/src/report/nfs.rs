//! `rig report nfs`: the summary that heads benches/run-nfs's report
//! (issue 4's figures): nfsync's files/s per preset over nfs:// and on the
//! latency mount, efs against 0 ms, and against libnfs `nfs-cp`.
//!
//! Rows of the raw TSV used here: preset `nfs-P` (tools `nfsync-v41`, `nfsync` = NFSv3,
//! `nfs-cp`, `parallel-nfs-cp`) and `mount-P` (tool `nfsync-mount`). The NFSv4.1
//! section compares the three nfsync paths at each RTT (issue 14's targets), with the
//! calls (`ops` column: `--json` rpcs) and client CPU (`cpu_s`) per file.

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

/// The paths of a corpus: label, preset prefix, tool.
const PATHS: [(&str, &str, &str); 3] = [
    ("nfsync nfs:// NFSv4.1", "nfs-", "nfsync-v41"),
    ("nfsync nfs:// NFSv3", "nfs-", "nfsync"),
    ("nfsync mount path (latency FUSE)", "mount-", "nfsync-mount"),
];

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
        if matches!(tool, "nfsync" | "nfsync-v41" | "nfsync-mount")
            && r.iter().any(|x| x.1 != "ok" && x.1 != "cap")
        {
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
            "\nfiles/s = files ÷ median wall of the reps (nfsync 3 reps at default options, \
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
    /// a file costs in calls and CPU, and issue 14's targets.
    pub fn v41_markdown(&self) -> String {
        let mut s = String::from("## NFSv4.1 against NFSv3 and the mount path (issue 14)\n\n");
        s.push_str(
            "| corpus | RTT | v4.1 files/s | v3 files/s | mount files/s | v4.1 ÷ v3 | v4.1 ÷ mount \
             | v4.1 ÷ its 0 ms | calls/file v4.1 · v3 | CPU ms/file v4.1 · v3 |\n",
        );
        s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let mut targets = Vec::new();
        for corpus in &self.corpora {
            let zero = self.fps(corpus, "nfs-0", "nfsync-v41").0;
            for p in &self.presets {
                let (v4, m4) = self.fps(corpus, &format!("nfs-{p}"), "nfsync-v41");
                let (v3, m3) = self.fps(corpus, &format!("nfs-{p}"), "nfsync");
                let (mt, mm) = self.fps(corpus, &format!("mount-{p}"), "nfsync-mount");
                let ratio = |a: Option<f64>, b: Option<f64>| {
                    a.zip(b.filter(|b| *b > 0.0))
                        .map_or("n/a".to_string(), |(a, b)| format!("{:.2}", a / b))
                };
                let cost = |tool: &str| {
                    self.per_file(corpus, &format!("nfs-{p}"), tool)
                        .map_or("n/a".to_string(), |(c, _)| format!("{c:.2}"))
                };
                let cpu = |tool: &str| {
                    self.per_file(corpus, &format!("nfs-{p}"), tool)
                        .map_or("n/a".to_string(), |(_, c)| format!("{c:.3}"))
                };
                let _ = writeln!(
                    s,
                    "| {corpus} | {p} | {} | {} | {} | {} | {} | {} | {} · {} | {} · {} |",
                    num(v4, &m4),
                    num(v3, &m3),
                    num(mt, &mm),
                    ratio(v4, v3),
                    ratio(v4, mt),
                    ratio(v4, zero),
                    cost("nfsync-v41"),
                    cost("nfsync"),
                    cpu("nfsync-v41"),
                    cpu("nfsync"),
                );
                if p == "efs" {
                    let over_mount = if corpus.contains("efs") { 5.0 } else { 2.0 };
                    let check = |name: String, v: Option<f64>, target: f64| {
                        let shown = v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
                        let met = v.is_some_and(|v| v >= target);
                        format!(
                            "{name} = {shown} (target ≥ {target}): {}",
                            if met { "met" } else { "NOT met" }
                        )
                    };
                    let r = |a: Option<f64>, b: Option<f64>| {
                        a.zip(b.filter(|b| *b > 0.0)).map(|(a, b)| a / b)
                    };
                    targets.push(check(
                        format!("{corpus}: v4.1 at efs ÷ v4.1 at 0 ms"),
                        r(v4, zero),
                        0.9,
                    ));
                    targets.push(check(format!("{corpus}: v4.1 ÷ v3 at efs"), r(v4, v3), 1.0));
                    targets.push(check(
                        format!("{corpus}: v4.1 ÷ mount at efs"),
                        r(v4, mt),
                        over_mount,
                    ));
                }
            }
        }
        s.push_str(
            "\nSame runs as the summary. calls/file = `--json` rpcs (NFSv4.1 COMPOUNDs, NFSv3 \
             procedures, retries included) ÷ files in the corpus, directories and big files \
             included; CPU = nfsync's user + system time (`/usr/bin/time`) ÷ files. \
             The two versions run in alternating order rep by rep.\n\n",
        );
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
                    "nfsync-v41" => "v4.1",
                    "nfsync" => "v3",
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
efs-blog\tnfs-efs\tnfsync\ts\t0\t1\t2\tok\t1000\t1\t0\t3030\t0\t0\t1.2
efs-blog\tmount-efs\tnfsync-mount\ts\t0\t1\t10\tok\t1000\t1\t0\t0\t0\t0
";
        let s = Summary::new(raw, Vec::new());
        let md = s.v41_markdown();
        assert!(
            md.contains("| efs-blog | efs | 952 | 500 | 100 | 1.90 | 9.52 | 0.95 | 1.01 · 3.03 | 0.600 · 1.200 |"),
            "{md}"
        );
        assert!(
            md.contains("v4.1 at efs ÷ v4.1 at 0 ms = 0.95 (target ≥ 0.9): met"),
            "{md}"
        );
        assert!(
            md.contains("v4.1 ÷ mount at efs = 9.52 (target ≥ 5): met"),
            "{md}"
        );
    }
}
