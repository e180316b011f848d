//! `rig report sweep`: benches/sweep's `--jobs auto` against the best fixed
//! `--jobs`, per path × preset × corpus.
//!
//! Raw columns (tab-separated, named by the header line): path preset corpus
//! phase n rep cap_s wall_s status scale files bytes done_files elapsed_s
//! jobs_final jobs_max history diffs. `phase` is sweep (one run per N),
//! rerun (the two best N again) or auto; `status` ok, cap, skipped, fail or
//! rcN.

use std::collections::BTreeMap;

use super::mt::Mt;
use super::{distinct, median};

/// One run: the raw columns by name.
struct Run(BTreeMap<String, String>);

impl Run {
    fn get(&self, col: &str) -> &str {
        self.0.get(col).map_or("", String::as_str)
    }

    fn num(&self, col: &str) -> f64 {
        self.get(col).parse().unwrap_or(0.0)
    }

    fn key(&self) -> (&str, &str, &str) {
        (self.get("path"), self.get("preset"), self.get("corpus"))
    }

    /// files/s; for a capped run an upper bound (files / cap).
    fn fps(&self) -> Option<f64> {
        match self.get("status") {
            "ok" => Some(self.num("files") / self.num("wall_s")),
            "cap" => Some(self.num("files") / self.num("cap_s")),
            _ => None,
        }
    }

    fn fps0(&self) -> f64 {
        self.fps().unwrap_or(0.0)
    }

    /// The jobs history (jobs@seconds), the middle left out when long.
    fn history(&self) -> String {
        let h: Vec<&str> = match self.get("history") {
            "" | "-" => Vec::new(),
            h => h.split_whitespace().collect(),
        };
        if h.is_empty() {
            return "–".into();
        }
        if h.len() > 8 {
            let more = format!("… ({} more)", h.len() - 7);
            let mut short: Vec<&str> = h[..6].to_vec();
            short.push(&more);
            short.push(h[h.len() - 1]);
            return short.join(" ");
        }
        h.join(" ")
    }
}

fn fmt_fps(v: Option<f64>, capped: bool) -> String {
    let Some(v) = v else { return "–".into() };
    let n = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    if capped { format!("< {n}") } else { n }
}

/// 90 % bootstrap interval of median(auto) / median(best): how far one
/// sweep's ratio can be trusted. Seeded, so a report is reproducible from its
/// TSV.
fn interval(auto: &[f64], best: &[f64]) -> (f64, f64) {
    const DRAWS: usize = 2000;
    let mut rng = Mt::new(1);
    let mut rs: Vec<f64> = (0..DRAWS)
        .map(|_| {
            let a = median(rng.resample(auto));
            a / median(rng.resample(best))
        })
        .collect();
    rs.sort_by(|a, b| a.total_cmp(b));
    let lo = (0.05 * DRAWS as f64) as usize;
    let hi = (0.95 * DRAWS as f64) as usize - 1;
    (rs[lo], rs[hi])
}

/// One path × preset × corpus: auto/best against the bar.
struct Verdict {
    combo: String,
    ratio: f64,
    need: f64,
}

pub struct Sweep {
    runs: Vec<Run>,
}

impl Sweep {
    pub fn new(raw: &str) -> Sweep {
        let mut lines = raw.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
        let runs = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                Run(header
                    .iter()
                    .zip(l.split('\t'))
                    .map(|(h, v)| (h.to_string(), v.to_string()))
                    .collect())
            })
            .collect();
        Sweep { runs }
    }

    fn combos(&self) -> Vec<(&str, &str, &str)> {
        let mut out = Vec::new();
        for r in &self.runs {
            if !out.contains(&r.key()) {
                out.push(r.key());
            }
        }
        out
    }

    pub fn presets(&self) -> String {
        distinct(self.runs.iter().map(|r| r.get("preset"))).join(",")
    }

    /// The summary table's rows and each combination's verdict.
    fn summary(&self) -> (Vec<String>, Vec<Verdict>) {
        let mut lines = Vec::new();
        let mut verdicts = Vec::new();
        for key in self.combos() {
            let (path, preset, corpus) = key;
            let rs: Vec<&Run> = self.runs.iter().filter(|r| r.key() == key).collect();
            let (files, scale) = (rs[0].get("files"), rs[0].get("scale"));
            // The re-run N in order of appearance, with their runs.
            let mut reruns: Vec<(&str, Vec<&Run>)> = Vec::new();
            for r in rs.iter().filter(|r| r.get("phase") == "rerun") {
                match reruns.iter_mut().find(|(n, _)| *n == r.get("n")) {
                    Some((_, v)) => v.push(r),
                    None => reruns.push((r.get("n"), vec![r])),
                }
            }
            let autos: Vec<&Run> = rs
                .iter()
                .copied()
                .filter(|r| r.get("phase") == "auto")
                .collect();
            let bad = rs
                .iter()
                .filter(|r| !matches!(r.get("status"), "ok" | "cap" | "skipped"))
                .count();
            if reruns.is_empty() || autos.is_empty() {
                lines.push(format!(
                    "| {path} | {preset} | {corpus} | {scale} | {files} | – | – | – | – | – | – | – | – | no data |"
                ));
                continue;
            }
            let mut ranked: Vec<(&str, f64, &Vec<&Run>)> = reruns
                .iter()
                .map(|(n, v)| (*n, median(v.iter().map(|r| r.fps0()).collect()), v))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            let (best, best_med, best_runs) = ranked[0];
            let second = ranked.get(1).map_or("–".into(), |(n, m, _)| {
                format!("{n} ({})", fmt_fps(Some(*m), false))
            });
            let auto_f: Vec<f64> = autos.iter().map(|r| r.fps0()).collect();
            let auto_med = median(auto_f.clone());
            // The run whose files/s is the median (or the lower middle one).
            let mut by_fps = autos.clone();
            by_fps.sort_by(|a, b| a.fps0().total_cmp(&b.fps0()));
            let mid = by_fps[(by_fps.len() - 1) / 2];
            let ratio = if best_med != 0.0 {
                auto_med / best_med
            } else {
                0.0
            };
            let best_f: Vec<f64> = best_runs.iter().map(|r| r.fps0()).collect();
            let (lo, hi) = if best_med != 0.0 && best_f.iter().all(|v| *v > 0.0) {
                interval(&auto_f, &best_f)
            } else {
                (0.0, 0.0)
            };
            let need = if corpus == "large" { 0.95 } else { 0.90 };
            let mut verdict = if ratio >= need { "pass" } else { "**FAIL**" }.to_string();
            // A shortfall that rounds to the bar shows a third digit, or
            // "0.90 FAIL" reads as a bug.
            let rounded: f64 = format!("{ratio:.2}").parse().unwrap_or(ratio);
            let ratio_s = if ratio < need && need <= rounded {
                format!("{ratio:.3}")
            } else {
                format!("{ratio:.2}")
            };
            if bad > 0 {
                verdict += &format!(" ({bad} run(s) failed the check)");
            }
            let extra = if corpus == "large" {
                let mbs = rs[0].num("bytes") / 1e6;
                format!(" ({:.0} MB/s)", mbs * best_med / rs[0].num("files"))
            } else {
                String::new()
            };
            lines.push(format!(
                "| {path} | {preset} | {corpus} | {scale} | {files} | {best} | {}{extra} | {second} | \
                 {} | {ratio_s} | {lo:.2}–{hi:.2} | {} ({}) | {} | {verdict} |",
                fmt_fps(Some(best_med), false),
                fmt_fps(Some(auto_med), false),
                mid.get("jobs_final"),
                mid.get("jobs_max"),
                mid.history(),
            ));
            verdicts.push(Verdict {
                combo: format!("{path}/{preset}/{corpus}"),
                ratio,
                need,
            });
        }
        (lines, verdicts)
    }

    pub fn markdown(&self, machine: &str, cmdline: &str, notes: &str) -> String {
        let mut out: Vec<String> = vec![
            "# `--jobs auto` against the best fixed `--jobs` (issue 5)\n".into(),
            format!("Command: `{cmdline}`\n"),
            format!("Machine and run:\n\n```\n{}\n```\n", machine.trim_end()),
            "Method: for each path × preset × corpus, `nfsync --json --jobs N` once for every N \
             of the sweep (highest N first; a run is killed at 2 × the second-best sweep time so \
             far and marked `> cap`; after two capped runs in a row lower N are not run), then the two \
             best N and `--jobs auto` are run again `reps` times each (`large`: `--large-reps`), \
             interleaved, and compared by their median; the 90 % interval of auto/best is a \
             bootstrap of both medians (it leaves out that the best N is itself picked as the \
             faster of two, which favours it). files/s = regular files in the corpus / wall time of the nfsync \
             process (process start to exit, connection set-up included). Every run writes a \
             fresh destination and is checked with `rsync -anciH --delete SRC/ DEST/` (plus \
             `--omit-link-times` on nfs: ganesha does not store symlink mtimes) printing nothing.\n"
                .into(),
            format!(
                "Paths: **mount** = the latency FUSE mount (`rig mount --delay P`: every FUSE request \
             costs P), a fresh mount per run; **nfs** = nfsync's NFSv3 client to nfs-ganesha \
             behind `rig proxy` with a one-way delay of P/2, i.e. every RPC round trip costs P \
             (a fresh ganesha per path × preset × corpus, a fresh directory per run). \
             P: {presets}. Pass: auto ≥ 90 % of the best fixed files/s \
             (≥ 95 % on `large`).\n",
                presets = crate::preset::text()
            ),
            "## Summary\n".into(),
            "| path | preset | corpus | scale | files | best fixed N | its files/s | 2nd N (files/s) | \
             auto files/s | auto/best | 90 % interval | auto jobs_final (max) | auto jobs history (jobs@s, median run) | pass |"
                .into(),
            "|---|---|---|---:|---:|---:|---:|---|---:|---:|---|---|---|---|".into(),
        ];
        let (lines, verdicts) = self.summary();
        out.extend(lines);
        out.push(String::new());
        out.push(format!("{}\n", pass_line(&verdicts)));
        if !notes.trim().is_empty() {
            out.push("## Notes\n".into());
            out.push(format!("{}\n", notes.trim()));
        }

        out.push(
            "## Sweep (files/s of the single sweep run per N; `< x` = killed at the cap, `–` = not run)\n"
                .into(),
        );
        let sweeps: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.get("phase") == "sweep")
            .collect();
        let mut ns = distinct(sweeps.iter().map(|r| r.get("n")));
        ns.sort_by_key(|n| n.parse::<i64>().unwrap_or(i64::MAX));
        out.push(format!(
            "| path | preset | corpus | {} |",
            ns.iter()
                .map(|n| format!("N={n}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        out.push(format!("|---|---|---|{}", "---:|".repeat(ns.len())));
        for key in self.combos() {
            let cells: Vec<String> = ns
                .iter()
                .map(
                    |n| match sweeps.iter().find(|r| r.key() == key && r.get("n") == n) {
                        None => "–".into(),
                        Some(r) => match r.get("status") {
                            "skipped" => "–".into(),
                            st @ ("ok" | "cap") => fmt_fps(r.fps(), st == "cap"),
                            st => format!("{} ({st})", fmt_fps(r.fps(), false)),
                        },
                    },
                )
                .collect();
            out.push(format!(
                "| {} | {} | {} | {} |",
                key.0,
                key.1,
                key.2,
                cells.join(" | ")
            ));
        }
        out.push(String::new());

        out.push("## Every re-run and auto run\n".into());
        out.push(
            "| path | preset | corpus | jobs | rep | wall s | files/s | status | nfsync elapsed_s | jobs_final (max) | history |"
                .into(),
        );
        out.push("|---|---|---|---|---:|---:|---:|---|---:|---|---|".into());
        for r in self
            .runs
            .iter()
            .filter(|r| matches!(r.get("phase"), "rerun" | "auto"))
        {
            out.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} |",
                r.get("path"),
                r.get("preset"),
                r.get("corpus"),
                r.get("n"),
                r.get("rep"),
                r.get("wall_s"),
                fmt_fps(r.fps(), r.get("status") == "cap"),
                r.get("status"),
                r.get("elapsed_s"),
                r.get("jobs_final"),
                r.get("jobs_max"),
                if r.get("n") == "auto" {
                    r.history()
                } else {
                    String::new()
                },
            ));
        }
        out.push(String::new());
        out.join("\n") + "\n"
    }

    /// The history line's figures: how many combinations pass, the lowest
    /// auto/best, and those that fall short.
    pub fn figures(&self) -> String {
        let (_, verdicts) = self.summary();
        let mut s = format!("auto/best: {}", pass_line(&verdicts));
        let all_pass = verdicts.iter().all(|v| v.ratio >= v.need);
        if let Some(low) = verdicts.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio))
            && all_pass
        {
            s += &format!(" Lowest {:.2} ({}).", low.ratio, low.combo);
        }
        s
    }
}

/// "N of M combinations pass." or "…: a/b/c (0.893) fall short."
fn pass_line(verdicts: &[Verdict]) -> String {
    let fails: Vec<&Verdict> = verdicts.iter().filter(|v| v.ratio < v.need).collect();
    let mut s = format!(
        "{} of {} combinations pass",
        verdicts.len() - fails.len(),
        verdicts.len()
    );
    if fails.is_empty() {
        s.push('.');
    } else {
        let list: Vec<String> = fails
            .iter()
            .map(|v| format!("{} ({:.3})", v.combo, v.ratio))
            .collect();
        s += &format!(": {} fall short.", list.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "path\tpreset\tcorpus\tphase\tn\trep\tcap_s\twall_s\tstatus\tscale\tfiles\tbytes\tdone_files\telapsed_s\tjobs_final\tjobs_max\thistory\tdiffs
m\tefs\tc\tsweep\t8\t1\t60\t2\tok\t1\t100\t1\t100\t2\t8\t8\t8@0\t0
m\tefs\tc\tsweep\t4\t1\t4\t4\tcap\t1\t100\t1\t50\t-\t-\t-\t-\t0
m\tefs\tc\trerun\t8\t1\t10\t2\tok\t1\t100\t1\t100\t2\t8\t8\t8@0\t0
m\tefs\tc\tauto\tauto\t1\t10\t2.5\tok\t1\t100\t1\t100\t2.4\t16\t32\t64@0 32@1 16@2\t0
";

    #[test]
    fn auto_below_the_bar_fails() {
        let s = Sweep::new(RAW);
        let md = s.markdown("date: x", "benches/sweep", "");
        assert!(
            md.contains("| m | efs | c | 1 | 100 | 8 | 50 | – | 40 | 0.80 | "),
            "{md}"
        );
        assert!(md.contains("0 of 1 combinations pass: m/efs/c (0.800) fall short."));
        assert!(md.contains("| m | efs | c | < 25 | 50 |"), "{md}");
        assert_eq!(
            s.figures(),
            "auto/best: 0 of 1 combinations pass: m/efs/c (0.800) fall short."
        );
    }
}
