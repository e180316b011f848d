//! `rig report chart`: the chart of a run report drawn again from its
//! markdown tables. The raw TSV behind a report is not committed, the report
//! is; so the README's chart can be made from the figures the repository
//! keeps, and always says what the report beside it says.

use super::run::{self, Row};

/// The first line of a run table's header (run::markdown writes it).
const RUN_HEADER: &str = "| tool | settings | wall s | files/s |";

/// The rows of every run table in `md` (`## CORPUS @ PRESET` headings, then
/// the table), with what the chart draws: tool, files/s, capped, check.
/// Other tables (run-nfs's summaries) are skipped.
pub fn rows(md: &str) -> Vec<Row> {
    let mut out = Vec::new();
    let mut key: Option<(String, String)> = None;
    let mut in_table = false;
    for line in md.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            key = heading
                .split_once(" @ ")
                .map(|(c, p)| (c.trim().to_string(), p.trim().to_string()));
            in_table = false;
            continue;
        }
        if line.starts_with(RUN_HEADER) {
            in_table = key.is_some();
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let (Some((corpus, preset)), cells) = (&key, cells(line)) else {
            continue;
        };
        if cells.len() < 9 {
            continue;
        }
        let files_s = cells[3].trim_start_matches('~').parse::<f64>();
        let Ok(files_s) = files_s else { continue };
        out.push(Row {
            corpus: corpus.clone(),
            preset: preset.clone(),
            tool: cells[0].clone(),
            setting: cells[1].trim_matches('`').replace("\\|", "|"),
            capped: cells[2].starts_with('>'),
            files_s,
            check: cells[8].clone(),
            ..Row::default()
        });
    }
    out
}

/// The cells of a table line, split at `|` but not at `\|`, trimmed.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push_str("\\|");
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    out.push(cell.trim().to_string());
    out
}

/// The SVG of the report `md`, as `rig report run` draws it.
pub fn svg(md: &str) -> String {
    run::svg(&rows(md), run::CHART_TITLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "corpus\tpreset\ttool\tsetting\tn\trep\twall_s\tstatus\tfiles\tbytes\tdone_files\tops\tdiffs\n\
        nm\tefs\tnfsync\tnfsync SRC/ DEST/\t0\t1\t0.5\tok\t2000\t1000000\t0\t16000\t0\n\
        nm\tefs\trsync\trsync -a\t0\t1\t30\tcap\t2000\t1000000\t400\t3000\t0\n\
        nm\tefs\tparallel\tfind | parallel -j {N} -n 32 rsync -aR\t8\t1\t4\tok\t2000\t1000000\t0\t38000\t0\n\
        nm\tefs\txcp\txcp -r\t8\t1\t2\tfail\t2000\t1000000\t0\t22000\t181\n\
        nm\twan\trsync\trsync -a\t0\t1\t50\tok\t2000\t1000000\t0\t30000\t0\n";

    /// What the report says, the chart redrawn from it says: the same bars
    /// (tool, files/s as printed, capped, check) in the same order.
    #[test]
    fn report_tables_give_back_the_rows() {
        let want = run::rows(RAW);
        let md = run::markdown(&want, "cpu: 2", "benches/run", None);
        let got = rows(&md);
        let key = |r: &Row| {
            (
                r.corpus.clone(),
                r.preset.clone(),
                r.tool.clone(),
                r.setting.clone(),
                format!("{:.0}", r.files_s),
                r.capped,
                r.check.clone(),
            )
        };
        assert_eq!(got.len(), 5);
        assert_eq!(
            got.iter().map(key).collect::<Vec<_>>(),
            want.iter().map(key).collect::<Vec<_>>()
        );
        assert!(got.iter().any(|r| r.capped && r.tool == "rsync"));
        assert!(got.iter().any(|r| r.check.starts_with("FAIL")));
        let chart = svg(&md);
        assert!(chart.starts_with("<svg") && chart.contains("nm @ wan"));
        assert_eq!(chart.matches("<rect x=").count(), 5);
    }

    /// Tables that are not run tables (run-nfs's summaries) are not bars.
    #[test]
    fn other_tables_are_skipped() {
        let md = "## summary\n\n| preset | v4.1 | v3 |\n|---|---:|---:|\n| efs | 10 | 20 |\n\n\
                  ## nm @ efs\n\n| tool | settings | wall s | files/s | MB/s | vs nfsync | ops/file | in flight | check | reps | sweep (N:wall) |\n\
                  |---|---|---:|---:|---:|---:|---:|---:|---|---:|---|\n\
                  | nfsync | `nfsync SRC/ DEST/` | 0.46 | 4394 | 14.7 | 1.00× | 8.6 | 276 | ok | 3 |  |\n\n\
                  | other | table |\n|---|---|\n| x | 1 |\n";
        let got = rows(md);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].tool.as_str(), got[0].files_s), ("nfsync", 4394.0));
    }
}
