//! The paths options name on the server, over `nfs://`: DEST's own path,
//! `--backup-dir`, `--link-dest`/`--compare-dest`/`--copy-dest` and `--temp-dir` are
//! walked with LOOKUP, which never follows a symlink, and `-K` follows none. A link met
//! on the way is refused whoever owns it (the mount path follows links of root's and
//! ours: `rsync_trust`), with the answer the mount path gives a link of another user:
//! a backup through it fails for that file (exit 23), a basis directory through it is
//! not used (a warning), `--temp-dir` through it ends the run (exit 1), DEST through it
//! is unusable (exit 3 here; 1 on the mount path, where it is refused before the run).
//!
//! Each case plants one link in the export to `outside/`, a directory beside the
//! export (the server could reach it, a client could not), owned by `nobody`, by root
//! (us), or by `nobody` with `--insecure-links`; it then checks that nothing in
//! `outside/` changed (names, sizes, times to the nanosecond, link counts: a write, a
//! temporary made and renamed away, a hard link to a basis file all show), the exit
//! code, and the one line naming the link.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use super::GaneshaTarget;
use crate::support::ganesha::Proto;
use crate::support::{Scratch, Target, Tree, describe, nfsync, slash};

/// `nobody`, the planter of the links.
const NOBODY: u32 = 65534;

/// Who owns the planted link, and whether the run says `--insecure-links`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cell {
    Foreign,
    Root,
    ForeignInsecure,
}

const CELLS: [Cell; 3] = [Cell::Foreign, Cell::Root, Cell::ForeignInsecure];

/// An old time, given to what `outside/` holds so that any later change shows.
fn old() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 30)
}

/// `src/` (`f`, `g`, `d/h`) and `outside/` in a scratch directory, and this case's
/// directory in the export (`dest/` with old copies of `f` and `g`, and `plant/`).
struct Case {
    proto: Proto,
    cell: Cell,
    local: Scratch,
    target: GaneshaTarget,
}

impl Case {
    /// `None` when ganesha cannot run here.
    fn new(proto: Proto, cell: Cell) -> Option<Case> {
        let target = GaneshaTarget::new(proto)?;
        let local = Scratch::new();
        Tree::new(local.join("src"))
            .file("f", "NEW\n")
            .file("g", "NEW\n")
            .file("d/h", "NEW\n");
        Tree::new(local.join("outside")).file("keep", "x\n");
        Tree::new(target.dest_path("dest"))
            .file("f", "OLD COPY\n")
            .file("g", "OLD COPY\n");
        fs::create_dir(target.dest_path("plant")).unwrap();
        Some(Case {
            proto,
            cell,
            local,
            target,
        })
    }

    /// `rel` in this case's directory of the export, as the server names it (the
    /// export's path is its path on the server, for MOUNT and from the NFSv4 root).
    fn p(&self, rel: &str) -> PathBuf {
        self.target.dest_path(rel)
    }

    /// `rel` below `outside/`.
    fn outside(&self, rel: &str) -> PathBuf {
        self.local.join("outside").join(rel)
    }

    /// A symlink `at` (in the export) -> `target`, owned as the cell says.
    fn plant(&self, at: &str, target: &Path) -> PathBuf {
        let at = self.p(at);
        std::os::unix::fs::symlink(target, &at).unwrap();
        if self.cell != Cell::Root {
            std::os::unix::fs::lchown(&at, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        at
    }

    /// nfsync `args` (with `--insecure-links` in that cell), `src/`, then the URL of
    /// `dest` in this case's directory.
    fn run(&self, args: &[&str], dest: &str) -> Output {
        let mut cmd = nfsync();
        cmd.args(args);
        if self.cell == Cell::ForeignInsecure {
            cmd.arg("--insecure-links");
        }
        cmd.arg(slash(&self.local.join("src")))
            .arg(self.target.dest_arg(dest))
            .output()
            .unwrap()
    }

    /// Gives everything in `outside/` an old mtime, then describes it.
    fn settle_outside(&self) -> Vec<String> {
        set_old(&self.outside(""));
        snapshot(&self.outside(""))
    }

    /// Runs `args` onto `dest` and checks: `outside/` as `before`, exit `code`, and
    /// that stderr refuses the link at `link` in one line (per updated file, with a
    /// backup); returns the run's output.
    fn refused(
        &self,
        args: &[&str],
        dest: &str,
        before: &[String],
        link: &Path,
        code: i32,
    ) -> Output {
        let out = self.run(args, dest);
        let what = format!(
            "{:?} {:?}, nfsync {args:?} onto {dest}",
            self.proto, self.cell
        );
        assert_eq!(
            snapshot(&self.outside("")),
            before,
            "{what}: outside/ changed\n{}",
            describe(&out)
        );
        assert_eq!(out.status.code(), Some(code), "{what}\n{}", describe(&out));
        let says = format!(
            "{}: symlink on the NFS server is not followed over nfs://",
            link.display()
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let per_file = code == 23;
        assert_eq!(
            err.lines().filter(|l| l.contains(&says)).count(),
            if per_file { 2 } else { 1 },
            "{what}: not one line (per updated file) says {says:?}\n{}",
            describe(&out)
        );
        for n in ["f", "g"].iter().filter(|_| per_file) {
            let line = format!("/dest/{n}: {says}");
            assert!(err.contains(&line), "{what}: {line:?}\n{}", describe(&out));
        }
        assert!(!err.contains("panicked"), "{what}\n{}", describe(&out));
        out
    }
}

/// Every cell of `case`, each on fresh trees.
fn each_cell(proto: Proto, case: impl Fn(&Case)) {
    for cell in CELLS {
        let Some(c) = Case::new(proto, cell) else {
            return;
        };
        case(&c);
    }
}

/// Gives `dir` and everything below it an old mtime (deepest first).
fn set_old(dir: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.symlink_metadata().unwrap().is_dir() {
            set_old(&p);
        }
        fs::File::open(&p).unwrap().set_modified(old()).unwrap();
    }
    fs::File::open(dir).unwrap().set_modified(old()).unwrap();
}

/// Each entry below `dir` (and `dir` itself): path, size, mtime to the nanosecond and
/// link count, sorted.
fn snapshot(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<String>) {
        // (`outside/` holds no links: following them sees what a link there leads to.)
        let m = dir.metadata().unwrap();
        out.push(format!(
            "{} size={} mtime={}.{:09} nlink={}",
            rel.display(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.nlink()
        ));
        if m.is_dir() {
            for e in fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                walk(&e.path(), &rel.join(e.file_name()), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new("."), &mut out);
    out.sort();
    out
}

/// `--backup-dir=bdir` where `dest/bdir` is a link to `outside/`, and an absolute
/// `--backup-dir` through a link higher up (`plant/opd/sub`, `plant/opd` the link) and
/// at its end (`plant/opd`): the backup of each updated file fails (exit 23), the old
/// copy stays.
pub fn backup_dir(proto: Proto) {
    each_cell(proto, |c| {
        let link = c.plant("dest/bdir", &c.outside(""));
        let before = c.settle_outside();
        c.refused(&["-a", "--backup-dir=bdir"], "dest", &before, &link, 23);
        assert_eq!(fs::read(c.p("dest/f")).unwrap(), b"OLD COPY\n");
    });
    for under in ["/sub", ""] {
        each_cell(proto, |c| {
            let link = c.plant("plant/opd", &c.outside(""));
            let before = c.settle_outside();
            let arg = format!("--backup-dir={}{under}", link.display());
            c.refused(&["-a", &arg], "dest", &before, &link, 23);
            assert_eq!(fs::read(c.p("dest/g")).unwrap(), b"OLD COPY\n");
        });
    }
}

/// `--link-dest`, `--compare-dest`, `--copy-dest` through `plant/osl` -> `outside/`,
/// where `outside/` holds `f` and `g` as the source's (size and mtime) but other
/// bytes: a followed basis would link them, leave them out, or copy their bytes. Not
/// used (a warning), exit 0, DEST gets the source's bytes. Also a relative
/// `--link-dest=../plant/osl`.
pub fn basis_dirs(proto: Proto) {
    for (option, relative) in [
        ("--link-dest", false),
        ("--link-dest", true),
        ("--compare-dest", false),
        ("--copy-dest", false),
    ] {
        each_cell(proto, |c| {
            fs::remove_dir_all(c.p("dest")).unwrap();
            fs::create_dir(c.p("dest")).unwrap();
            for n in ["f", "g"] {
                let src = c.local.join("src").join(n);
                fs::write(c.outside(n), "OUT\n").unwrap();
                let t = fs::metadata(&src).unwrap().modified().unwrap();
                fs::File::options()
                    .write(true)
                    .open(c.outside(n))
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }
            let link = c.plant("plant/osl", &c.outside(""));
            let before = snapshot(&c.outside(""));
            let arg = match relative {
                true => format!("{option}=../plant/osl"),
                false => format!("{option}={}", link.display()),
            };
            let out = c.refused(&["-a", &arg], "dest", &before, &link, 0);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("warning: {option} arg not used: ")),
                "{err}"
            );
            for n in ["f", "g"] {
                assert_eq!(fs::read(c.p("dest").join(n)).unwrap(), b"NEW\n", "{arg}");
            }
        });
    }
}

/// `--temp-dir` through `plant/osl` -> `outside/` (another user's link, or ours): the
/// run ends before it writes (exit 1), on updates and on new files alike.
pub fn temp_dir(proto: Proto) {
    for new in [false, true] {
        each_cell(proto, |c| {
            if new {
                fs::remove_dir_all(c.p("dest")).unwrap();
            }
            let link = c.plant("plant/osl", &c.outside(""));
            let before = c.settle_outside();
            let arg = format!("--temp-dir={}", link.display());
            c.refused(&["-a", &arg], "dest", &before, &link, 1);
            assert!(!c.p("dest/d").exists(), "new={new}: the run went on");
        });
    }
}

/// DEST below a link (`plant/osl/sub`, `plant/osl` -> `outside/`): unusable, exit 3.
/// DEST that is itself a link to `outside/` is not a directory on the server: exit 3,
/// nothing written through it.
pub fn dest_itself(proto: Proto) {
    each_cell(proto, |c| {
        let link = c.plant("plant/osl", &c.outside(""));
        let before = c.settle_outside();
        c.refused(&["-a"], "plant/osl/sub", &before, &link, 3);
    });
    each_cell(proto, |c| {
        c.plant("plant/osl", &c.outside(""));
        let before = c.settle_outside();
        let out = c.run(&["-a"], "plant/osl");
        assert_eq!(snapshot(&c.outside("")), before, "{}", describe(&out));
        assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("destination exists and is not a directory"),
            "{}",
            describe(&out)
        );
    });
}

/// `-K` with `dest/d` a link to `outside/d` (a directory beside the export): that
/// entry fails (exit 23: `-K` follows no link over nfs://), nothing is written through
/// it, the rest is copied.
pub fn keep_dirlinks(proto: Proto) {
    each_cell(proto, |c| {
        fs::create_dir(c.outside("d")).unwrap();
        c.plant("dest/d", &c.outside("d"));
        let before = c.settle_outside();
        let out = c.run(&["-aK"], "dest");
        assert_eq!(snapshot(&c.outside("")), before, "{}", describe(&out));
        assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines()
                .any(|l| l.contains("/dest/d: ")
                    && l.contains("-K (--keep-dirlinks) is not supported")),
            "{}",
            describe(&out)
        );
        assert!(c.p("dest/d").is_symlink());
        assert_eq!(fs::read(c.p("dest/f")).unwrap(), b"NEW\n");
    });
}

/// The tests of this module, as `#[test]`s of the module that expands it for `$proto`.
macro_rules! operator_path_tests {
    ($proto:expr) => {
        #[test]
        fn backup_dir_through_a_server_link() {
            super::operator_paths::backup_dir($proto);
        }

        #[test]
        fn basis_dirs_through_a_server_link() {
            super::operator_paths::basis_dirs($proto);
        }

        #[test]
        fn temp_dir_through_a_server_link() {
            super::operator_paths::temp_dir($proto);
        }

        #[test]
        fn dest_through_a_server_link() {
            super::operator_paths::dest_itself($proto);
        }

        #[test]
        fn keep_dirlinks_link_leading_outside() {
            super::operator_paths::keep_dirlinks($proto);
        }
    };
}
pub(super) use operator_path_tests;
