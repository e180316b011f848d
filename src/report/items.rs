//! The per-file lines: what rsync's `-i`, `-v`, `-ii`, `-vv` and `--out-format` print for
//! each entry, counted for `--stats`, logged with `--log-file`, and held for rsync's
//! order ([`super::order`]).

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use super::format::{Item, LogFormat};
use super::itemize::{Itemize, Update};
use super::{Output, Source, Stats, order, progress};
use crate::meta::Kind;

/// The line of a change to `rel` from `src`: no link, no bytes yet.
fn source_item<'a>(code: Itemize, rel: &'a Path, src: Source<'a>) -> Item<'a> {
    Item {
        code,
        rel,
        kind: src.meta.kind,
        meta: Some(src.meta),
        src: Some(src.path),
        link: None,
        hard_link: None,
        bytes: 0,
        checksum: None,
    }
}

/// Whether `item` is about an entry already up to date: a code with no column set
/// that is neither new, nor sent, nor a link made to another name (rsync's "not
/// significant" items, shown only with `-ii` or `-vv`).
fn is_unchanged(item: &Item<'_>) -> bool {
    match item.code {
        Itemize::Changed(u, _, c) => u != Update::Received && !c.any() && item.hard_link.is_none(),
        _ => false,
    }
}

/// `%C`'s checksum of the file at `path`: xxh128, rsync's default for a local copy,
/// the number as rsync prints it. `None` where it cannot be read (the line then shows
/// spaces, as rsync's does for a checksum it does not know).
pub(super) fn file_checksum(path: &Path) -> Option<u128> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(h.digest128()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

impl Output {
    /// An itemized change (`-i`) or, with `-v`, the name of what changed, as rsync
    /// prints them: a directory with its slash, names escaped ([`escape_name`]).
    pub fn change(&self, code: Itemize, rel: &Path, src: Source<'_>) {
        self.change_to(code, rel, None, src);
    }

    /// [`Output::change`] for a symlink: rsync adds ` -> TARGET`.
    pub fn change_to(&self, code: Itemize, rel: &Path, link: Option<&Path>, src: Source<'_>) {
        self.item(&Item {
            link,
            ..source_item(code, rel, src)
        });
    }

    /// [`Output::change`] for a hard link to `to` (rsync adds ` => TO`).
    pub fn hard_link(&self, code: Itemize, rel: &Path, to: &Path, src: Source<'_>) {
        self.item(&Item {
            hard_link: Some(to),
            ..source_item(code, rel, src)
        });
    }

    /// [`Output::hard_link`] for a name that ends up as it was (`--link-dest`: the
    /// link holds the basis copy itself): a line only with `-ii` or `-vv`, as for an
    /// entry up to date.
    pub fn linked_up_to_date(&self, code: Itemize, rel: &Path, to: &Path, src: Source<'_>) {
        self.unchanged(&Item {
            hard_link: Some(to),
            ..source_item(code, rel, src)
        });
    }

    /// [`Output::change`] for a file whose content was sent, which took `took`: with
    /// `--progress` its progress line follows its line (`stats` gives the counts).
    pub fn received(
        &self,
        code: Itemize,
        rel: &Path,
        src: Source<'_>,
        (took, stats): (std::time::Duration, &Stats),
    ) {
        self.item_with(&source_item(code, rel, src), Some((took, stats)));
    }

    /// Counts a change and prints its line where one is wanted: with `%i` in the
    /// format every change, otherwise (`-v`) what was transferred or created and
    /// directories, as rsync does.
    fn item(&self, item: &Item<'_>) {
        self.item_with(item, None)
    }

    fn item_with(&self, item: &Item<'_>, sent: Option<(std::time::Duration, &Stats)>) {
        // Every entry a re-run finds up to date comes here: without -ii or -vv, that
        // is all.
        if is_unchanged(item) && !self.shows_unchanged() {
            return;
        }
        let transferred = item.code.update() == Some(Update::Received);
        if item.code.is_new() {
            self.tally.created.add(item.kind);
        }
        let bytes = if transferred {
            let size = item.meta.map_or(0, |m| m.size);
            self.tally.transferred.fetch_add(1, Relaxed);
            self.tally.transferred_size.fetch_add(size, Relaxed);
            size
        } else {
            0
        };
        let rel = match self.shown_as.get() {
            Some((dest, src)) if item.rel == dest => src.as_path(),
            _ => item.rel,
        };
        let item = &Item {
            bytes,
            rel,
            ..*item
        };
        if is_unchanged(item) {
            return self.unchanged(item);
        }
        // A file's attribute-only change is rsync's to show only when stdout itemizes;
        // then its log has it too.
        let shown = self.format.as_ref().is_some_and(|f| f.has_i)
            || item.code.update() != Some(Update::Attributes)
            || item.kind == Kind::Dir;
        if !shown {
            return;
        }
        // rsync's `-vv` says "is uptodate" as its generator goes and names what was
        // sent as its receiver finishes it: those names come after the directory's
        // up-to-date lines.
        let late = self.uptodate_lines() && item.kind != Kind::Dir;
        // `%C`: rsync shows a file's checksum when it was sent, or for every file
        // with -c.
        let wants_sum = self.format.as_ref().is_some_and(|f| f.has_checksum)
            || self.log.as_ref().is_some_and(|l| l.format.has_checksum);
        let checksum = match (wants_sum, item.kind, item.src) {
            (true, Kind::File, Some(src)) if transferred || self.all_checksums => {
                file_checksum(src)
            }
            _ => None,
        };
        let item = &Item { checksum, ..*item };
        // rsync's dry run logs no transfers (its receiver, which logs them, gets none).
        let log = self
            .log
            .as_ref()
            .filter(|_| !(self.dry_run && transferred))
            .map(|l| l.format.render(item, &self.context));
        let out = self
            .format
            .as_ref()
            .filter(|_| !self.quiet)
            .map(|f| self.escape(&f.render(item, &self.context)));
        if self.ordered() {
            let line = order::Line {
                log,
                out: out.map(|o| (self.json, o)),
                late,
            };
            return self.hold(item, line);
        }
        if let (Some(l), Some(line)) = (&self.log, log) {
            l.line(&line);
        }
        let Some(mut line) = out else {
            return;
        };
        if let (Some(human), Some((took, stats)), true) = (self.file_progress, sent, transferred) {
            let mut n = self.sent.lock().unwrap();
            *n += 1;
            line.push(b'\n');
            line.extend_from_slice(progress::file_line(human, bytes, took, *n, stats).as_bytes());
            self.emit(self.json, line);
            return;
        }
        self.emit(self.json, line);
    }

    /// Puts `item`'s line in its place in rsync's order; prints what is due.
    fn hold(&self, item: &Item<'_>, line: order::Line) {
        let (dir, name) = match item.kind {
            Kind::Dir => (order::key(item.rel), None),
            _ => {
                let mut k = order::key(item.rel);
                let name = k.pop();
                (k, name)
            }
        };
        let mut held = self.order.lock().unwrap();
        let ready = held.line(dir, name, line);
        self.print_lines(ready);
    }

    /// Whether `-vv` names each entry already up to date ("NAME is uptodate").
    fn uptodate_lines(&self) -> bool {
        self.verbose > 1 && self.format.as_ref().is_some_and(|f| !f.has_i)
    }

    /// Whether entries already up to date get a line: itemized with `-ii` (or `-i
    /// -vv`), named with `-vv`.
    fn shows_unchanged(&self) -> bool {
        let has_i = self.format.as_ref().is_some_and(|f| f.has_i);
        !self.quiet && (has_i && (self.itemize_all || self.verbose > 1) || self.uptodate_lines())
    }

    /// The line of an entry already up to date: none, unless asked for. `-ii` (or
    /// `-i -vv`) itemizes it with blank columns (`.f          NAME`, `hf          NAME`
    /// for a name already linked, `cd          DIR/` for a directory made like a basis
    /// directory's); `-vv` says `NAME is uptodate`, as rsync's generator does, except for
    /// a directory that was there (rsync's generator says nothing of those).
    fn unchanged(&self, item: &Item<'_>) {
        if !self.shows_unchanged() {
            return;
        }
        let out = if let Some(f) = self.format.as_ref().filter(|f| f.has_i) {
            f.render(item, &self.context)
        } else {
            if item.code.update() == Some(Update::Attributes) && item.kind == Kind::Dir {
                return;
            }
            let bare = Item {
                link: None,
                hard_link: None,
                ..*item
            };
            let mut l = LogFormat::names().render(&bare, &self.context);
            l.extend_from_slice(b" is uptodate");
            l
        };
        let out = self.escape(&out);
        if self.ordered() {
            let line = order::Line {
                log: None,
                out: Some((self.json, out)),
                late: false,
            };
            return self.hold(item, line);
        }
        self.emit(self.json, out);
    }
}
