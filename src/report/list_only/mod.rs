//! `--list-only`: the sources listed in rsync's format instead of copied.
//!
//! rsync prints one line per entry of its file list: permissions, size (14 columns;
//! commas, or with `-h` units of 1000 and `-hh` of 1024), local mtime and the name,
//! `-> target` after a symlink when `-l` is on. The order is its incremental file
//! list's: the top level (`.` first for a `SRC/`), files before directories, each
//! directory followed by what is below it. The listing is written as the walk goes,
//! depth first, with the directories it comes to next listed ahead by a few threads
//! ([`ahead`]), so memory is bounded by the depth of the tree times its widest
//! directory plus what is listed ahead, as for the copy.

mod ahead;

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::meta::{Kind, Meta};
use crate::options::relative::{self, Named};
use crate::report::units::HumanLevel;
use crate::report::{Escaped, Output, escape_name};
use crate::source::{self, ListError, Listing, Source, SrcEntry};

use ahead::{Ahead, Kids, Slot};

/// Lists the sources on `w`; per-entry errors go to `out` and give exit 23.
pub fn run(cfg: &Config, source: &dyn Source, out: &Output, w: &mut dyn Write) -> ExitCode {
    let ahead = Ahead::new(&cfg.filter);
    let mut l = Lister {
        cfg,
        source,
        out,
        w,
        errors: 0,
        ahead: &ahead,
    };
    let r = std::thread::scope(|s| {
        for _ in 0..ahead::THREADS {
            s.spawn(|| ahead.work());
        }
        let r = l.top();
        ahead.close();
        r
    });
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::Success,
        Err(e) => {
            out.error(Path::new("stdout"), e);
            ExitCode::Partial
        }
        Ok(()) if l.errors > 0 => ExitCode::Partial,
        Ok(()) => ExitCode::Success,
    }
}

struct Lister<'a> {
    cfg: &'a Config,
    source: &'a dyn Source,
    out: &'a Output,
    w: &'a mut dyn Write,
    errors: u64,
    ahead: &'a Ahead<'a>,
}

/// One entry to list: its path in the listing, where it is, and the `-R` names below it.
struct Item {
    shown: PathBuf,
    entry: SrcEntry,
    implied: Option<Arc<Named>>,
    /// Its listing, asked for ahead once its turn was known.
    listing: Option<Arc<Slot>>,
}

impl Lister<'_> {
    fn top(&mut self) -> io::Result<()> {
        let mut items: Vec<Item> = Vec::new();
        let mut tree = Named::default();
        let mut listed = Vec::new();
        if let Some(names) = &self.cfg.paths.files_from
            && let Some(source) = self.cfg.sources.first()
        {
            let source = self.source.path_of(source);
            for n in names {
                listed.extend(tree.add_listed(&source, Path::new(n), self.cfg.paths.relative));
            }
        }
        let given = match self.cfg.paths.files_from {
            Some(_) => &[][..],
            None => &self.cfg.sources[..],
        };
        let mut operands = Vec::new();
        for src in given {
            if self.cfg.paths.relative && !relative::is_anchor_only(src) {
                tree.add_operand(src);
            } else {
                operands.push(src);
            }
        }
        for given in operands.into_iter().chain(&listed) {
            let src = &self.source.path_of(given);
            let b = src.as_os_str().as_bytes();
            let contents = b.ends_with(b"/") || b.ends_with(b"/.") || b == b".";
            let entry = match self.source.operand(given, contents) {
                Ok(e) => e,
                Err(e) => {
                    self.fail(src, &e);
                    continue;
                }
            };
            if contents && entry.meta.kind == Kind::Dir {
                let dot = SrcEntry {
                    name: ".".into(),
                    ..entry
                };
                self.push(&mut items, Path::new("."), dot.clone(), None);
                let listing = source::list_entry(&dot);
                for e in self.list(&dot, Path::new(""), listing) {
                    let shown = PathBuf::from(&e.name);
                    self.push(&mut items, &shown, e, None);
                }
            } else {
                let name = src.file_name().map(OsString::from).unwrap_or(".".into());
                let e = SrcEntry {
                    name: name.clone(),
                    ..entry
                };
                self.push(&mut items, Path::new(&name), e, None);
            }
        }
        for (name, child) in &tree.children {
            if let Some(e) = self.stat_named(name, child) {
                self.push(&mut items, Path::new(name), e, Some(child.clone()));
            }
        }
        items.sort_by(order);
        self.ask_ahead(&mut items, Vec::new());
        for item in items {
            self.item(&item)?;
            if item.entry.meta.kind == Kind::Dir && item.shown != Path::new(".") {
                self.below(&item)?;
            }
        }
        Ok(())
    }

    /// Whether what is below a directory item is listed: all of it with -r, else only
    /// `-R` names (and a `DIR/`'s top level).
    fn lists_below(&self, item: &Item) -> bool {
        item.entry.meta.kind == Kind::Dir
            && item.shown != Path::new(".")
            && match &item.implied {
                None => self.cfg.recursive,
                Some(t) => t.named && (self.cfg.recursive || t.contents),
            }
    }

    /// Gives `items`' directories their listings: the one a lister already asked for
    /// (in `kids`), or one asked for now, last first (see [`ahead`]).
    fn ask_ahead(&self, items: &mut [Item], mut kids: Kids) {
        for i in (0..items.len()).rev() {
            let item = &mut items[i];
            if !self.lists_below(item) {
                continue;
            }
            let asked = kids.iter().position(|(n, _)| *n == item.entry.name);
            item.listing = Some(match asked {
                Some(k) => kids.swap_remove(k).1,
                None => {
                    let deep = item.implied.is_none() && self.cfg.recursive;
                    self.ahead.ask(item.entry.clone(), item.shown.clone(), deep)
                }
            });
        }
    }

    /// Keeps the first entry of a name, as rsync's file list does.
    fn push(&self, items: &mut Vec<Item>, shown: &Path, entry: SrcEntry, t: Option<Arc<Named>>) {
        if items.iter().any(|i| i.shown == shown) {
            return;
        }
        items.push(Item {
            shown: shown.to_path_buf(),
            entry,
            implied: t,
            listing: None,
        });
    }

    /// Lists what is below a directory item: all of it with -r, else only `-R` names
    /// (and a `DIR/`'s top level).
    fn below(&mut self, dir: &Item) -> io::Result<()> {
        let mut items = Vec::new();
        let mut kids = Vec::new();
        if self.lists_below(dir) {
            let (listing, asked) = match &dir.listing {
                Some(slot) => self.ahead.take(slot),
                None => (source::list_entry(&dir.entry), Vec::new()),
            };
            kids = asked;
            for e in self.list(&dir.entry, &dir.shown, listing) {
                let shown = dir.shown.join(&e.name);
                let t = dir
                    .implied
                    .as_ref()
                    .and_then(|t| t.children.get(&e.name).cloned());
                self.push(&mut items, &shown, e, t);
            }
        }
        if let Some(t) = &dir.implied {
            for (name, child) in &t.children {
                let shown = dir.shown.join(name);
                if items.iter().any(|i| i.shown == shown) {
                    continue;
                }
                if let Some(e) = self.stat_named(name, child) {
                    self.push(&mut items, &shown, e, Some(child.clone()));
                }
            }
        }
        items.sort_by(order);
        self.ask_ahead(&mut items, kids);
        for item in items {
            self.item(&item)?;
            if item.entry.meta.kind == Kind::Dir {
                self.below(&item)?;
            }
        }
        Ok(())
    }

    fn stat_named(&mut self, name: &OsString, t: &Named) -> Option<SrcEntry> {
        // As the copy: a directory on the way to named paths is what it points to.
        match self
            .source
            .operand(&t.src, t.contents || !t.children.is_empty())
        {
            Ok(e) => Some(SrcEntry {
                name: name.clone(),
                ..e
            }),
            Err(e) => {
                self.fail(&t.src, &e);
                None
            }
        }
    }

    /// A source directory's entries in `listing` the filter lets through (`rel`: its
    /// path in the listing, which the rules match), its problems reported.
    fn list(&mut self, dir: &SrcEntry, rel: &Path, listing: Listing) -> Vec<SrcEntry> {
        let (entries, problems) = match listing {
            Ok(r) => r,
            Err(ListError::Dir(e)) => {
                self.fail(&dir.path, &e);
                return vec![];
            }
            Err(_) => return vec![],
        };
        for p in problems {
            match p {
                ListError::Entry(p, e) => self.fail(&p, &e),
                ListError::Vanished(p) => self
                    .out
                    .warn(format_args!("file has vanished: {}", Escaped(p))),
                ListError::Dir(e) => self.fail(&dir.path, &e),
            }
        }
        let f = &self.cfg.filter;
        entries
            .into_iter()
            .filter(|e| {
                f.is_empty() || !f.is_excluded(&rel.join(&e.name), e.meta.kind == Kind::Dir)
            })
            .collect()
    }

    fn fail(&mut self, p: &Path, e: &io::Error) {
        self.errors += 1;
        self.out.error(p, e);
    }

    /// An item's line; none for a directory --no-implied-dirs does not send.
    fn item(&mut self, item: &Item) -> io::Result<()> {
        if self.cfg.paths.no_implied_dirs && item.implied.as_ref().is_some_and(|t| !t.named) {
            return Ok(());
        }
        self.line(&item.shown, &item.entry)
    }

    fn line(&mut self, shown: &Path, e: &SrcEntry) -> io::Result<()> {
        let target = match e.meta.kind {
            Kind::Symlink => source::read_link(e).ok(),
            _ => None,
        };
        let size = match (e.meta.kind, &target) {
            (Kind::Symlink, Some(t)) => t.len() as u64,
            (Kind::Symlink, None) => e.meta.size,
            (Kind::File | Kind::Dir, _) => e.meta.size,
            _ => 0,
        };
        let name = escape_name(shown.as_os_str().as_bytes());
        let human = self.cfg.human_readable;
        // rsync's column is wider when its numbers have separators.
        let width = if human == HumanLevel::Digits { 11 } else { 14 };
        write!(
            self.w,
            "{} {:>width$} {} {}",
            perm_string(&e.meta),
            human.num(size),
            crate::report::format::timestring(e.meta.mtime.sec),
            name
        )?;
        if self.cfg.links
            && let Some(t) = target
        {
            write!(self.w, " -> {}", escape_name(t.as_os_str().as_bytes()))?;
        }
        writeln!(self.w)
    }
}

/// rsync's order within one directory: `.` first, files before directories, then by
/// name (bytes).
fn order(a: &Item, b: &Item) -> std::cmp::Ordering {
    let rank = |i: &Item| match (i.shown == Path::new("."), i.entry.meta.kind == Kind::Dir) {
        (true, _) => 0,
        (false, false) => 1,
        (false, true) => 2,
    };
    rank(a)
        .cmp(&rank(b))
        .then_with(|| a.entry.name.as_bytes().cmp(b.entry.name.as_bytes()))
}

/// `drwxr-xr-x`, as `ls -l` and rsync print it.
fn perm_string(m: &Meta) -> String {
    let t = match m.kind {
        Kind::Dir => 'd',
        Kind::Symlink => 'l',
        Kind::Fifo => 'p',
        Kind::Socket => 's',
        Kind::CharDev => 'c',
        Kind::BlockDev => 'b',
        _ => '-',
    };
    let mut s = String::with_capacity(10);
    s.push(t);
    let bit = |s: &mut String, on: bool, c: char| s.push(if on { c } else { '-' });
    for (shift, special, lower, upper) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let p = (m.mode >> shift) & 7;
        bit(&mut s, p & 4 != 0, 'r');
        bit(&mut s, p & 2 != 0, 'w');
        let x = p & 1 != 0;
        s.push(match (m.mode & special != 0, x) {
            (true, true) => lower,
            (true, false) => upper,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_are_spelled_like_ls() {
        let m = |kind, mode| Meta {
            mode,
            ..Meta::of(kind, 0)
        };
        assert_eq!(perm_string(&m(Kind::Dir, 0o755)), "drwxr-xr-x");
        assert_eq!(perm_string(&m(Kind::File, 0o4754)), "-rwsr-xr--");
        assert_eq!(perm_string(&m(Kind::Dir, 0o1777)), "drwxrwxrwt");
        assert_eq!(perm_string(&m(Kind::File, 0o2640)), "-rw-r-S---");
    }
}
