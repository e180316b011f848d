//! Output: what nfsync prints is what rsync prints for the same change.
//!
//! Each test runs rsync and nfsync with the same options from the same source onto two
//! copies of the same starting destination (the trees of [`crate::support::sides`]:
//! files older, newer and extra there) and compares what they print: `--stats`' count
//! lines, `--out-format` lines with every escape nfsync gives (`%C` too), the `--log-file` (times
//! and pids masked), `-v`'s names and the skipped-special line; `-a`/`--no-X` order by
//! the trees; `--list-only`'s sizes at each `-h` level and a changed device's `-i`
//! line (from a source of their own).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::sides::{Side, Sides, Via};
use crate::support::{Scratch, Tree, describe, nfsync, root_or_skip, slash};

/// One run of each, side by side.
struct Both {
    rsync: Output,
    nfsync: Output,
    /// `rsync -anciH --delete` from rsync's result to nfsync's: empty when equal.
    diff: String,
    sides: Sides,
}

impl Both {
    fn log(&self, who: &str) -> String {
        std::fs::read_to_string(self.sides.join(format!("{who}.log"))).unwrap_or_default()
    }
}

/// `rsync FLAGS SRC/ DEST` and `nfsync FLAGS SRC/ DEST` onto copies of the start tree;
/// `LOG` in a flag is replaced by `rsync.log` / `nfsync.log` in the scratch directory.
fn both(via: Via, flags: &[&str]) -> Both {
    let sides = Sides::standard(via, |_, _| {});
    let src = slash(&sides.join("src"));
    let ran = sides.run_ok("", b"", &|side, cmd| {
        let log = sides.join(format!("{}.log", side.name()));
        if side == Side::Rsync {
            cmd.env("LANG", "C.UTF-8");
        }
        cmd.args(
            flags
                .iter()
                .map(|f| f.replace("LOG", &log.to_string_lossy())),
        )
        .arg(&src);
    });
    Both {
        rsync: ran.rsync,
        nfsync: ran.nfsync,
        diff: sides.diff(&[]),
        sides,
    }
}

fn stdout_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The lines of `lines` that `keep` keeps, sorted (nfsync's come as its jobs finish).
fn sorted(lines: &[String], keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = lines.iter().filter(|l| keep(l)).cloned().collect();
    v.sort();
    v
}

/// `--stats` lines that count entries and bytes of content: the same as rsync's.
fn count_lines(lines: &[String]) -> Vec<String> {
    let mut v: Vec<String> = lines
        .iter()
        .filter(|l| {
            l.starts_with("Number of")
                || l.starts_with("Total file size")
                || l.starts_with("Total transferred file size")
                || l.starts_with("Literal data")
                || l.starts_with("Matched data")
                || l.starts_with("File list size")
        })
        .cloned()
        .collect();
    // "total size is N  speedup is X": N is the same, the speedup is about the pipe.
    v.extend(lines.iter().filter_map(|l| {
        l.strip_prefix("total size is ")
            .map(|r| r.split("  ").next().unwrap().to_owned())
    }));
    v
}

fn assert_stats_match(via: Via, flags: &[&str]) {
    let b = both(via, flags);
    assert!(b.diff.is_empty(), "{flags:?}: trees differ:\n{}", b.diff);
    let (want, got) = (
        count_lines(&stdout_lines(&b.rsync)),
        count_lines(&stdout_lines(&b.nfsync)),
    );
    assert!(want.len() >= 10, "{flags:?}: rsync printed {want:?}");
    assert_eq!(
        got, want,
        "{flags:?}: nfsync's --stats counts differ from rsync's"
    );
    // The layout: the same labels in the same order, each line's own.
    let label = |l: &String| l.split(':').next().unwrap().to_owned();
    let labels = |o: &Output| -> Vec<String> {
        stdout_lines(o)
            .iter()
            .filter(|l| l.contains(": "))
            .map(label)
            .collect()
    };
    assert_eq!(labels(&b.nfsync), labels(&b.rsync), "{flags:?}: layout");
}

#[test]
fn stats_count_lines_are_rsyncs() {
    assert_stats_match(Via::Mount, &["-a", "--stats"]);
    assert_stats_match(Via::Mount, &["-a", "--stats", "--delete"]);
    assert_stats_match(Via::Mount, &["-a", "--stats", "--delete", "-h"]);
    assert_stats_match(Via::Mount, &["-a", "--stats", "-hh", "--no-D"]);
    assert_stats_match(Via::Mount, &["-an", "--stats", "--delete"]);
}

#[test]
fn stats_over_nfs_are_rsyncs() {
    assert_stats_match(Via::InProc, &["-a", "--no-D", "--stats", "--delete"]);
}

/// Every escape nfsync gives but `%b %t %p` (checked below): the transfer's own
/// fields, rsync's daemon-only escapes left as written, widths and `%'l`.
const FORMAT: &str = "%i|%o|%n|%l|%f|%L|%B|%U|%G|%M|%m|%a|%h|%u|%P|%-9n|%6l|%'l|%''l|%%";

fn assert_out_format_matches(via: Via, flags: &[&str]) {
    let b = both(via, flags);
    assert!(b.diff.is_empty(), "{flags:?}: trees differ:\n{}", b.diff);
    let (want, got) = (
        sorted(&stdout_lines(&b.rsync), |_| true),
        sorted(&stdout_lines(&b.nfsync), |_| true),
    );
    assert!(want.len() > 5, "{flags:?}: rsync printed {want:?}");
    assert!(
        want == got,
        "{flags:?}: --out-format differs\n--- rsync\n{}\n--- nfsync\n{}",
        want.join("\n"),
        got.join("\n")
    );
}

#[test]
fn out_format_escapes_match_rsync() {
    let f = format!("--out-format={FORMAT}");
    assert_out_format_matches(Via::Mount, &["-a", "--delete", &f]);
    // Without %i or %o a deletion is `deleting NAME`, as rsync prints it.
    assert_out_format_matches(Via::Mount, &["-a", "--delete", "--out-format=%n %l"]);
}

#[test]
fn out_format_over_nfs_matches_rsync() {
    let f = format!("--out-format={FORMAT}");
    assert_out_format_matches(Via::InProc, &["-a", "--no-D", "--delete", &f]);
}

/// `%b` is the content written (rsync's counts its protocol bytes too), `%p` one pid,
/// `%t` rsync's `YYYY/MM/DD HH:MM:SS`.
#[test]
fn out_format_bytes_pid_and_time() {
    let b = both(Via::Mount, &["-a", "--out-format=%i|%l|%b|%p|%t"]);
    let lines = stdout_lines(&b.nfsync);
    assert!(lines.len() > 5, "{lines:?}");
    let mut pids = BTreeSet::new();
    for l in &lines {
        let f: Vec<&str> = l.split('|').collect();
        assert_eq!(f.len(), 5, "{l}");
        let expected = if f[0].starts_with('>') { f[1] } else { "0" };
        assert_eq!(f[2], expected, "%b: {l}");
        pids.insert(f[3].to_owned());
        assert!(is_timestamp(f[4]), "%t: {l}");
    }
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert!(pids.iter().all(|p| p.parse::<u32>().is_ok()), "{pids:?}");
}

/// `%C`: the checksum of each file sent (of every file shown with `-c`), rsync's
/// xxh128, blank for the rest; in `--out-format` and the `--log-file`, on the mount
/// path and over nfs://.
#[test]
fn checksum_escape_is_rsyncs() {
    assert_out_format_matches(Via::Mount, &["-a", "--delete", "--out-format=%C|%i|%n"]);
    assert_out_format_matches(Via::Mount, &["-a", "-c", "--out-format=[%40C]%n"]);
    assert_out_format_matches(Via::InProc, &["-a", "--no-D", "--out-format=%C %n"]);
    assert_logs_match(&["-a", "--log-file=LOG", "--log-file-format=%C %i %n"]);
}

/// `%c` counts rsync's delta-transfer checksums: refused with the reason.
#[test]
fn out_format_refuses_what_it_cannot_give() {
    for (flag, letter) in [("--out-format=%n %c", "%c"), ("--log-file-format=%c", "%c")] {
        let out = nfsync().args([flag, "a", "b"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{letter} is not supported (")),
            "{err}"
        );
    }
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'/',
            10 => *c == b' ',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// A log line without its `YYYY/MM/DD HH:MM:SS [PID] ` prefix (which must be there).
fn unprefixed(line: &str) -> String {
    assert!(is_timestamp(&line[..19]), "no time: {line}");
    let rest = line[19..].strip_prefix(" [").expect(line);
    let (pid, text) = rest.split_once("] ").expect(line);
    assert!(pid.parse::<u32>().is_ok(), "no pid: {line}");
    text.to_owned()
}

fn assert_logs_match(flags: &[&str]) {
    let b = both(Via::Mount, flags);
    assert!(b.diff.is_empty(), "{flags:?}: trees differ:\n{}", b.diff);
    let parse = |who: &str| -> Vec<String> { b.log(who).lines().map(unprefixed).collect() };
    let (want, got) = (parse("rsync"), parse("nfsync"));
    assert!(want.len() > 5, "{flags:?}: rsync logged {want:?}");
    // First `building file list`, last the totals (bytes sent and received are
    // rsync's protocol's; the total size is the same).
    assert_eq!(got.first(), want.first(), "{flags:?}: first line");
    let split = |v: &[String]| -> (Vec<String>, Vec<String>) {
        let ends = v
            .iter()
            .rev()
            .take_while(|l| l.starts_with("sent ") || l.starts_with("total size"))
            .count();
        let totals = v[v.len() - ends..]
            .iter()
            .map(|l| match l.find("total size") {
                Some(i) => l[i..].split("  speedup").next().unwrap().to_owned(),
                None => "sent".to_owned(),
            })
            .collect();
        let mut middle = v[1..v.len() - ends].to_vec();
        middle.sort();
        (middle, totals)
    };
    let ((want, want_end), (got, got_end)) = (split(&want), split(&got));
    assert!(!want_end.is_empty(), "{flags:?}: rsync's log has no totals");
    assert_eq!(got_end, want_end, "{flags:?}: last lines");
    assert!(
        want == got,
        "{flags:?}: --log-file differs\n--- rsync\n{}\n--- nfsync\n{}",
        want.join("\n"),
        got.join("\n")
    );
}

#[test]
fn log_file_is_rsyncs() {
    assert_logs_match(&["-a", "--delete", "--log-file=LOG"]);
    // With -i on stdout the log has attribute-only changes too.
    assert_logs_match(&["-ai", "--delete", "--log-file=LOG"]);
    assert_logs_match(&["-av", "--delete", "--log-file=LOG"]);
    // A dry run logs what it would change, but no deletions (rsync's rule).
    assert_logs_match(&["-an", "--delete", "--log-file=LOG"]);
    assert_logs_match(&[
        "-a",
        "--delete",
        "--log-file=LOG",
        "--log-file-format=%o %n%L %l",
    ]);
}

/// `-v` names what was transferred or created and what was deleted, as rsync does; its
/// last two lines give the same total size. rsync's `sending incremental file list`
/// is about its protocol and is not printed.
#[test]
fn verbose_names_are_rsyncs() {
    let b = both(Via::Mount, &["-av", "--delete"]);
    assert!(b.diff.is_empty(), "trees differ:\n{}", b.diff);
    let names = |o: &Output| {
        sorted(&stdout_lines(o), |l| {
            !l.is_empty()
                && !l.starts_with("sent ")
                && !l.starts_with("total size is ")
                && l != "sending incremental file list"
        })
    };
    let (want, got) = (names(&b.rsync), names(&b.nfsync));
    assert!(want.len() > 5, "{want:?}");
    assert_eq!(got, want, "-v names differ");
    let total = |o: &Output| {
        stdout_lines(o).into_iter().find_map(|l| {
            l.strip_prefix("total size is ")
                .map(|r| r[..r.find(' ').unwrap()].to_owned())
        })
    };
    assert!(total(&b.nfsync).is_some(), "{}", describe(&b.nfsync));
    assert_eq!(total(&b.nfsync), total(&b.rsync));
}

/// The last of `-a` and `--no-X` wins, as in rsync: `--no-t -a` keeps times.
#[test]
fn last_of_archive_and_no_option_wins() {
    for flags in [
        &["--no-t", "-a"][..],
        &["-a", "--no-t"],
        &["--no-p", "-a"],
        &["--no-D", "-a"],
        &["-a", "--no-D", "--specials"],
        &["--no-l", "-rlpt"],
        &["-rlpt", "--no-l", "-l"],
    ] {
        let b = both(Via::Mount, flags);
        // Where the last word is --no-t neither keeps times: each copy has the time it
        // was made, which may differ by a second, so times are left out of the
        // comparison and checked directly instead.
        let no_times = flags.last() == Some(&"--no-t");
        let d = if no_times {
            b.sides.diff(&["--no-t", "-O"])
        } else {
            b.diff.clone()
        };
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        let older = std::fs::metadata(b.sides.nfsync("older")).unwrap();
        assert_eq!(
            std::os::unix::fs::MetadataExt::mtime(&older) == 1_600_000_000,
            !no_times,
            "{flags:?}: the updated file's mtime is {}",
            std::os::unix::fs::MetadataExt::mtime(&older)
        );
    }
}

/// Without -D a fifo is skipped with rsync's own line on stdout.
#[test]
fn skipped_special_is_rsyncs_line() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("f", "f\n").fifo("fifo").fifo("sub/pipe");
    let run = |cmd: &mut Command, dst: &Path| {
        let out = cmd
            .arg("-rlpt")
            .arg(slash(src.root()))
            .arg(dst)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        sorted(&stdout_lines(&out), |l| l.starts_with("skipping"))
    };
    let want = run(&mut Command::new("rsync"), &s.join("r"));
    let mut ours = std::process::Command::new(crate::support::bin());
    let got = run(&mut ours, &s.join("n"));
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(got, want);
}

/// `--list-only`'s size column is rsync's, byte for byte, at every `-h` level: plain
/// digits in 11 columns with `--no-h` (also after `-hh`: the last word wins), thousands
/// separators with no `-h`, K/M/G by 1000 with `-h` and by 1024 with `-hh`. The sizes
/// sit on each side of those steps, and a sparse file's (no data written) is past 32
/// bits.
#[test]
fn list_only_sizes_are_rsyncs_at_every_h_level() {
    let sides = Sides::new(Via::Mount);
    let t = Tree::new(sides.join("src"));
    for size in [0, 999, 1000, 1023, 1024, 123_456, 1_234_567] {
        t.random_file(format!("f{size}"), size, size);
    }
    std::fs::File::create(t.path("sparse"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    t.age();
    let src = slash(t.root());
    for h in [&[][..], &["--no-h"], &["-h"], &["-hh"], &["-hh", "--no-h"]] {
        let ran = sides.run_ok("", b"", &|side, cmd| {
            if side == Side::Rsync {
                cmd.env("LANG", "C.UTF-8");
            }
            cmd.arg("--list-only").args(h).arg(&src);
        });
        let (want, got) = (stdout_lines(&ran.rsync), stdout_lines(&ran.nfsync));
        // `.` and the eight files.
        assert_eq!(want.len(), 9, "rsync --list-only {h:?}: {want:?}");
        assert!(
            want == got,
            "--list-only {h:?} differs\n--- rsync\n{}\n--- nfsync\n{}",
            want.join("\n"),
            got.join("\n")
        );
        assert_eq!(ran.nfsync.stdout, ran.rsync.stdout, "--list-only {h:?}");
    }
    for side in [Side::Rsync, Side::Nfsync] {
        assert!(
            !sides.join(side.dir()).exists(),
            "{} --list-only wrote to DEST",
            side.name()
        );
    }
}

/// A device whose attributes changed since the last run is itemized as rsync itemizes
/// it: `D` (a device), not `S` (a special file), with the columns of what changed
/// (mode; mode, owner and group; time), whether or not times are kept.
#[test]
fn device_attribute_changes_itemize_as_rsyncs() {
    if !root_or_skip("itemizing changed devices") {
        return;
    }
    let sides = Sides::new(Via::Mount);
    let t = Tree::new(sides.join("src"));
    t.device("chr", libc::S_IFCHR, 1, 3)
        .device("blk", libc::S_IFBLK, 7, 200)
        .device("timed", libc::S_IFCHR, 1, 5)
        .chmod("chr", 0o600)
        .chmod("blk", 0o600)
        .chmod("timed", 0o600)
        .age();
    // DEST exists: rsync's `created directory` line would name each side's own.
    for side in [Side::Rsync, Side::Nfsync] {
        std::fs::create_dir(sides.join(side.dir())).unwrap();
    }
    let src = slash(t.root());
    let run = |flags: &[&str]| -> Vec<String> {
        let ran = sides.run_ok("", b"", &|side, cmd| {
            if side == Side::Rsync {
                cmd.env("LANG", "C.UTF-8");
            }
            cmd.args(flags).arg(&src);
        });
        let d = sides.diff(&[]);
        assert!(d.is_empty(), "{flags:?}: trees differ:\n{d}");
        let (want, got) = (
            sorted(&stdout_lines(&ran.rsync), |_| true),
            sorted(&stdout_lines(&ran.nfsync), |_| true),
        );
        assert!(
            want == got,
            "{flags:?}: -i differs\n--- rsync\n{}\n--- nfsync\n{}",
            want.join("\n"),
            got.join("\n")
        );
        want
    };
    let first = run(&["-a", "-i"]);
    assert!(first.contains(&"cD+++++++++ blk".to_owned()), "{first:?}");

    t.chmod("chr", 0o640)
        .chmod("blk", 0o644)
        .chown("blk", 1234, 2345)
        .mtime("timed", 1_700_000_000, 0);
    let second = run(&["-a", "-i"]);
    assert_eq!(
        second,
        [".D...p..... chr", ".D...pog... blk", ".D..t...... timed"],
        "rsync itemized: {second:?}"
    );

    t.chmod("chr", 0o604);
    let third = run(&["-rpgoD", "-i"]);
    assert_eq!(third, [".D...p..... chr"], "rsync itemized: {third:?}");
}

/// Where stderr is no terminal (a cron job's mail, a script's log) a run that went well
/// prints nothing, as rsync; one that did not, or `-v`, `--stats` or progress asked
/// for, bring the summary line back. One big file is summed up in bytes per second.
#[test]
fn quiet_without_a_terminal_unless_asked() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.random_file("big", 3 << 20, 7).age();
    let summary = |o: &Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| l.contains(" files copied ("))
            .map(str::to_owned)
    };
    let run = |flags: &[&str], dst: &str| {
        let out = nfsync()
            .args(flags)
            .arg(slash(src.root()))
            .arg(s.join(dst))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        out
    };
    let plain = run(&["-a"], "d0");
    assert!(plain.stderr.is_empty(), "{}", describe(&plain));
    assert!(plain.stdout.is_empty(), "{}", describe(&plain));
    // A run that did not end well says how it ended, after its errors (here a
    // non-empty directory in the way of the file).
    std::fs::create_dir_all(s.join("d9/big/sub")).unwrap();
    let failed = nfsync()
        .arg("-a")
        .arg(slash(src.root()))
        .arg(s.join("d9"))
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(23), "{}", describe(&failed));
    assert!(summary(&failed).is_some(), "{}", describe(&failed));
    for (i, flags) in [
        &["-av"][..],
        &["-a", "--stats"],
        &["-a", "--progress"],
        &["-a", "--info=progress2"],
    ]
    .iter()
    .enumerate()
    {
        let out = run(flags, &format!("d{}", i + 1));
        let line = summary(&out).unwrap_or_else(|| panic!("{flags:?}: {}", describe(&out)));
        assert!(line.contains("B/s, jobs"), "{flags:?}: {line}");
    }
}

/// `--progress` (or `-P`) where stdout is no terminal: after each file sent, rsync's progress
/// line for it (its size, 100%, rate, time, `xfr#N` and the entries left to check),
/// and the names as with `-v`; on the mount path and over nfs://.
#[test]
fn progress_lines_without_a_terminal_are_rsyncs() {
    let progress = regex::Regex::new(
        r"^ +([0-9,]+) 100% +[0-9]+\.[0-9]{2}[kMG]B/s +[0-9]+:[0-9]{2}:[0-9]{2} \(xfr#([0-9]+), (?:to|ir)-chk=[0-9]+/[0-9]+\)$",
    )
    .unwrap();
    for (via, flag) in [
        (Via::Mount, "--progress"),
        (Via::InProc, "--progress"),
        (Via::Mount, "-P"),
    ] {
        let b = both(via, &["-a", "--no-D", flag]);
        assert!(b.diff.is_empty(), "trees differ:\n{}", b.diff);
        // rsync redraws its line with a CR; the last drawing is the one that stays.
        let lines = |o: &Output| -> Vec<String> {
            stdout_lines(o)
                .iter()
                .map(|l| l.rsplit('\r').next().unwrap_or("").to_owned())
                .filter(|l| {
                    !l.is_empty()
                        && l != "sending incremental file list"
                        && !l.starts_with("created directory ")
                })
                .collect()
        };
        let (want, got) = (lines(&b.rsync), lines(&b.nfsync));
        let split = |ls: &[String]| {
            let (p, n): (Vec<String>, Vec<String>) =
                ls.iter().cloned().partition(|l| progress.is_match(l));
            let mut sizes: Vec<String> = p
                .iter()
                .map(|l| progress.captures(l).unwrap()[1].to_owned())
                .collect();
            sizes.sort();
            (sizes, sorted(&n, |_| true))
        };
        let (want_sizes, want_names) = split(&want);
        let (got_sizes, got_names) = split(&got);
        assert!(!want_sizes.is_empty(), "{want:?}");
        assert_eq!(got_sizes, want_sizes, "sizes sent differ:\n{got:?}");
        assert_eq!(got_names, want_names, "names differ");
        // Each progress line follows its file's name; they count the files sent.
        for (i, l) in got.iter().enumerate() {
            if let Some(c) = progress.captures(l) {
                assert!(i > 0 && !progress.is_match(&got[i - 1]), "{got:?}");
                let n: usize = c[2].parse().unwrap();
                let before = got[..i].iter().filter(|l| progress.is_match(l)).count();
                assert_eq!(n, before + 1, "{got:?}");
            }
        }
    }
}

/// `-8`: a name's bytes that are not UTF-8 are printed as they are, as rsync prints
/// them (without it both print `\#ooo`).
#[test]
fn eight_bit_output_prints_names_raw() {
    use std::os::unix::ffi::OsStrExt;
    for flags in [&["-ai"][..], &["-ai", "-8"]] {
        let sides = Sides::new(Via::Mount);
        let src = sides.join("src");
        std::fs::create_dir_all(&src).unwrap();
        let name = std::ffi::OsStr::from_bytes(b"hi\xf9name");
        std::fs::write(src.join(name), "x\n").unwrap();
        let ran = sides.run_ok("", b"", &|_, cmd| {
            cmd.env("LC_ALL", "C").args(flags).arg(slash(&src));
        });
        let line = |o: &Output| -> Vec<u8> {
            o.stdout
                .split(|&c| c == b'\n')
                .find(|l| l.starts_with(b">f"))
                .unwrap_or_else(|| panic!("{}", describe(o)))
                .to_vec()
        };
        let got = line(&ran.nfsync);
        assert_eq!(got, line(&ran.rsync), "{flags:?}");
        assert_eq!(got.ends_with(b"hi\xf9name"), flags.contains(&"-8"));
    }
}
