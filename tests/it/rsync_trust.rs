//! rsync's trust rule for the paths options name and for merge files: a symlink is
//! followed only when root or the caller owns it, `--insecure-links` turns that off.
//! Each case plants one link to `outside/` (owned by `nobody`, by us, or by `nobody`
//! with `--insecure-links`) and looks at `outside/` afterwards; rsync's
//! operator-path-* tests are the model. Root only (only root can give a link away).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{Scratch, Tree, describe, nfsync, root_or_skip, slash};

/// `nobody`, the planter of the links.
const NOBODY: u32 = 65534;

/// Who owns the planted link, and whether the run says `--insecure-links`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cell {
    Foreign,
    Own,
    ForeignInsecure,
}

impl Cell {
    const ALL: [Cell; 3] = [Cell::Foreign, Cell::Own, Cell::ForeignInsecure];

    /// Whether rsync's rule lets the link be followed.
    fn follows(self) -> bool {
        self != Cell::Foreign
    }
}

/// A fresh `src/` (`f` and `g`), `dest/` (old copies of both), `outside/` and
/// `plant/` under a scratch directory, per cell.
struct Case {
    s: Scratch,
    cell: Cell,
}

impl Case {
    fn new(cell: Cell) -> Case {
        let s = Scratch::new();
        Tree::new(s.join("src"))
            .file("f", "NEW\n")
            .file("g", "NEW\n");
        Tree::new(s.join("dest"))
            .file("f", "OLD COPY\n")
            .file("g", "OLD COPY\n");
        Tree::new(s.join("outside")).file("keep", "x\n");
        fs::create_dir(s.join("plant")).unwrap();
        Case { s, cell }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.s.join(rel)
    }

    /// A symlink `at` -> `target`, owned as the cell says.
    fn plant(&self, at: &str, target: &Path) -> PathBuf {
        let at = self.p(at);
        std::os::unix::fs::symlink(target, &at).unwrap();
        if self.cell != Cell::Own {
            std::os::unix::fs::lchown(&at, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        at
    }

    /// nfsync `args` then `src/ dest/` (with `--insecure-links` in that cell).
    fn run(&self, args: &[&std::ffi::OsStr]) -> Output {
        let mut cmd = nfsync();
        cmd.current_dir(self.s.path()).args(args);
        if self.cell == Cell::ForeignInsecure {
            cmd.arg("--insecure-links");
        }
        cmd.arg(slash(&self.p("src")))
            .arg(slash(&self.p("dest")))
            .output()
            .unwrap()
    }

    /// The names `outside/` holds, `keep` aside.
    fn outside(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.p("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "keep")
            .collect();
        v.sort();
        v
    }
}

/// Runs `case` in every cell, which returns whether the link was followed.
fn matrix(what: &str, case: impl Fn(&Case) -> bool) {
    for cell in Cell::ALL {
        let c = Case::new(cell);
        let followed = case(&c);
        assert_eq!(
            followed,
            cell.follows(),
            "{what}, {cell:?}: followed={followed}"
        );
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

#[test]
fn backup_dir_relative_to_dest_through_a_link() {
    if !root_or_skip("rsync_trust::backup_dir_relative_to_dest_through_a_link") {
        return;
    }
    matrix("--backup-dir=bdir (DEST/bdir -> outside)", |c| {
        c.plant("dest/bdir", &c.p("outside"));
        let out = c.run(&[os("-a"), os("--backup-dir=bdir")]);
        if !c.cell.follows() {
            assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("symlink owned by uid 65534"),
                "{}",
                describe(&out)
            );
        }
        !c.outside().is_empty()
    });
}

#[test]
fn backup_dir_absolute_through_a_parent_link() {
    if !root_or_skip("rsync_trust::backup_dir_absolute_through_a_parent_link") {
        return;
    }
    matrix("--backup-dir=plant/opd/sub (opd -> outside)", |c| {
        c.plant("plant/opd", &c.p("outside"));
        let arg = format!("--backup-dir={}", c.p("plant/opd/sub").display());
        c.run(&[os("-a"), os(&arg)]);
        !c.outside().is_empty()
    });
}

#[test]
fn inplace_backup_dir_through_a_link() {
    if !root_or_skip("rsync_trust::inplace_backup_dir_through_a_link") {
        return;
    }
    // With --inplace the backup is a copy of the old file, made in the backup dir.
    matrix("--inplace --backup-dir=plant/osl (-> outside)", |c| {
        let arg = format!(
            "--backup-dir={}",
            c.plant("plant/osl", &c.p("outside")).display()
        );
        let out = c.run(&[os("-a"), os("--inplace"), os(&arg)]);
        if !c.cell.follows() {
            assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
            assert_eq!(fs::read(c.p("dest/f")).unwrap(), b"OLD COPY\n");
        }
        !c.outside().is_empty()
    });
}

#[test]
fn partial_dir_through_a_link() {
    if !root_or_skip("rsync_trust::partial_dir_through_a_link") {
        return;
    }
    // --delay-updates holds files back in the partial dir: made there (create), or
    // staged in it, which moves its mtime (reuse); relative DIRs are per directory.
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
    for reuse in [false, true] {
        matrix(
            &format!("--partial-dir=plant/opd/sub (opd -> outside), reuse={reuse}"),
            |c| {
                c.plant("plant/opd", &c.p("outside"));
                if reuse {
                    fs::create_dir(c.p("outside/sub")).unwrap();
                    fs::File::open(c.p("outside/sub"))
                        .unwrap()
                        .set_modified(old)
                        .unwrap();
                }
                let arg = format!("--partial-dir={}", c.p("plant/opd/sub").display());
                let out = c.run(&[os("-a"), os("--delay-updates"), os(&arg)]);
                assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
                assert_eq!(fs::read(c.p("dest/f")).unwrap(), b"NEW\n");
                match reuse {
                    false => c.p("outside/sub").exists(),
                    true => {
                        fs::metadata(c.p("outside/sub"))
                            .unwrap()
                            .modified()
                            .unwrap()
                            != old
                    }
                }
            },
        );
    }
    matrix("--partial-dir=osl (dest/osl -> outside)", |c| {
        c.plant("dest/osl", &c.p("outside"));
        let outside = fs::File::open(c.p("outside")).unwrap();
        outside.set_modified(old).unwrap();
        let arg = "--partial-dir=osl";
        let out = c.run(&[os("-a"), os("--delay-updates"), os(arg)]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        assert_eq!(fs::read(c.p("dest/g")).unwrap(), b"NEW\n");
        fs::metadata(c.p("outside")).unwrap().modified().unwrap() != old
    });
}

#[test]
fn log_file_through_a_parent_link_and_a_leaf_link() {
    if !root_or_skip("rsync_trust::log_file_through_a_parent_link_and_a_leaf_link") {
        return;
    }
    matrix("--log-file=plant/opd/victim (opd -> outside)", |c| {
        c.plant("plant/opd", &c.p("outside"));
        let out = c.run(&[os("-a"), os("--log-file=plant/opd/victim")]);
        // rsync goes on without its log.
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        assert_eq!(fs::read(c.p("dest/f")).unwrap(), b"NEW\n");
        c.p("outside/victim").exists()
    });
    matrix("--log-file=plant/osl (osl -> outside/victim)", |c| {
        c.plant("plant/osl", &c.p("outside/victim"));
        let out = c.run(&[os("-a"), os("--log-file=plant/osl")]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        c.p("outside/victim").exists()
    });
}

#[test]
fn basis_dirs_through_a_link() {
    if !root_or_skip("rsync_trust::basis_dirs_through_a_link") {
        return;
    }
    // outside/ holds what src/ holds, with the same times: a followed basis matches.
    let basis = |c: &Case| {
        fs::remove_dir_all(c.p("dest")).unwrap();
        fs::create_dir(c.p("dest")).unwrap();
        for n in ["f", "g"] {
            fs::copy(c.p("src").join(n), c.p("outside").join(n)).unwrap();
            let t = fs::metadata(c.p("src").join(n))
                .unwrap()
                .modified()
                .unwrap();
            fs::File::options()
                .write(true)
                .open(c.p("outside").join(n))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        c.plant("plant/osl", &c.p("outside"))
    };
    matrix("--link-dest=plant/osl (-> outside)", |c| {
        let arg = format!("--link-dest={}", basis(c).display());
        let out = c.run(&[os("-a"), os(&arg)]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        fs::metadata(c.p("dest/f")).unwrap().ino() == fs::metadata(c.p("outside/f")).unwrap().ino()
    });
    matrix("--compare-dest=plant/osl (-> outside)", |c| {
        let arg = format!("--compare-dest={}", basis(c).display());
        let out = c.run(&[os("-a"), os(&arg)]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        !c.p("dest/f").exists()
    });
    // --copy-dest copies a basis copy that passes the quick check: outside/f, its
    // bytes other than the source's, is read only through a followed link.
    matrix("--copy-dest=plant/osl (-> outside)", |c| {
        let arg = format!("--copy-dest={}", basis(c).display());
        let t = fs::metadata(c.p("src/f")).unwrap().modified().unwrap();
        fs::write(c.p("outside/f"), "OUT\n").unwrap();
        let f = fs::File::options().write(true).open(c.p("outside/f"));
        f.unwrap().set_modified(t).unwrap();
        let out = c.run(&[os("-a"), os(&arg)]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        fs::read(c.p("dest/f")).unwrap() == b"OUT\n"
    });
}

#[test]
fn files_from_through_a_link() {
    if !root_or_skip("rsync_trust::files_from_through_a_link") {
        return;
    }
    matrix("--files-from=plant/osl (-> outside/list)", |c| {
        fs::write(c.p("outside/list"), "f\n").unwrap();
        c.plant("plant/osl", &c.p("outside/list"));
        let out = c.run(&[os("-a"), os("--files-from=plant/osl")]);
        if !c.cell.follows() {
            assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        }
        fs::read(c.p("dest/f")).unwrap() == b"NEW\n"
    });
}

#[test]
fn temp_dir_through_a_link() {
    if !root_or_skip("rsync_trust::temp_dir_through_a_link") {
        return;
    }
    // A temporary made in outside/ and renamed away leaves its mtime moved; an update
    // and a new file (which rsync writes there too).
    for new in [false, true] {
        matrix(
            &format!("--temp-dir=plant/osl (-> outside), new={new}"),
            |c| temp_dir_case(c, new),
        );
    }
}

/// One `--temp-dir` cell: whether the temporary was made in `outside/`.
fn temp_dir_case(c: &Case, new: bool) -> bool {
    if new {
        fs::remove_dir_all(c.p("dest")).unwrap();
        fs::create_dir(c.p("dest")).unwrap();
    }
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
    fs::File::open(c.p("outside"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let arg = format!(
        "--temp-dir={}",
        c.plant("plant/osl", &c.p("outside")).display()
    );
    let out = c.run(&[os("-a"), os(&arg)]);
    if c.cell.follows() {
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    } else {
        assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    }
    fs::metadata(c.p("outside")).unwrap().modified().unwrap() != old
}

#[test]
fn merge_files_through_a_link() {
    if !root_or_skip("rsync_trust::merge_files_through_a_link") {
        return;
    }
    // outside/rules would leave g out.
    matrix("-C with src/.cvsignore -> outside/rules", |c| {
        fs::write(c.p("outside/rules"), "g\n").unwrap();
        c.plant("src/.cvsignore", &c.p("outside/rules"));
        let out = c.run(&[os("-aC")]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        fs::read(c.p("dest/g")).unwrap() == b"OLD COPY\n"
    });
    matrix("--filter='. plant/osl' (-> outside/rules)", |c| {
        fs::write(c.p("outside/rules"), "- g\n").unwrap();
        c.plant("plant/osl", &c.p("outside/rules"));
        // Refusing the run is not following the link either.
        let out = c.run(&[os("-a"), os("--filter=. plant/osl")]);
        out.status.success() && fs::read(c.p("dest/g")).unwrap() == b"OLD COPY\n"
    });
}
