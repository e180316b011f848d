//! The per-file lines in rsync's order while the copy runs in parallel.
//!
//! rsync prints a directory's line, then its other entries by name, then each
//! subdirectory's section the same way: the pre-order of the tree with a directory's
//! non-directories first. Scripts that diff two runs' `-i` output, and rsync's own
//! tests, read that order. Here each directory is a section keyed by its path's
//! components; comparing keys as sequences is exactly that pre-order. Lines wait in
//! their section until every section before it has been printed and the entries
//! named before theirs are done (a big directory's lines flow as its names are
//! done), so what is held is only the lines that cannot be printed yet, and a line
//! for a place already passed is printed at once. Whatever is still held when
//! the run ends is printed then, in the same order: no line is ever lost.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::ffi::OsString;
use std::path::{Component, Path};

use super::Output;

/// A directory's place in the order: its path's components.
pub(super) type Key = Vec<OsString>;

/// The key of the directory at `rel` (`./` is the top).
pub(super) fn key(rel: &Path) -> Key {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            _ => None,
        })
        .collect()
}

/// One per-file line: what goes to the log file and what is printed (on stderr when
/// the flag says so).
pub(super) struct Line {
    pub log: Option<Vec<u8>>,
    pub out: Option<(bool, Vec<u8>)>,
    /// Printed after the directory's other entries' lines (rsync's `-vv` names what
    /// was sent after what was up to date).
    pub late: bool,
}

#[derive(Default)]
struct Section {
    /// The directory's own line.
    head: Vec<Line>,
    /// Its other entries' lines, by name.
    files: BTreeMap<OsString, Vec<Line>>,
    /// Its entries' late lines, in the order of their names, held until the last
    /// entry is done.
    late: BTreeMap<OsString, Vec<Line>>,
    /// Its subdirectories that will be walked.
    subdirs: Vec<OsString>,
    /// Its listing is done (or failed): no entry or subdirectory is added.
    closed: bool,
    /// Its entries queued and not yet done, by name.
    queued: BTreeSet<OsString>,
    /// Its head and the lines of the names before the first queued one are printed.
    started: bool,
}

impl Section {
    fn lines(self) -> impl Iterator<Item = Line> {
        self.head
            .into_iter()
            .chain(self.files.into_values().flatten())
            .chain(self.late.into_values().flatten())
    }

    /// Whether a line of `name` (`None`: the head) would be printed at once.
    fn past(&self, name: Option<&OsString>) -> bool {
        self.started && name.is_none_or(|n| self.queued.first().is_none_or(|q| n < q))
    }

    /// The lines now due, once started: those of the names before the first queued.
    fn due(&mut self) -> Vec<Line> {
        let mut out = std::mem::take(&mut self.head);
        while let Some(e) = self.files.first_entry() {
            if self.queued.first().is_some_and(|q| e.key() >= q) {
                break;
            }
            out.extend(e.remove());
        }
        out
    }
}

/// The sections not printed yet and the walk through them.
pub(super) struct Order {
    sections: BTreeMap<Key, Section>,
    /// The sections to print next, the next one last.
    todo: Vec<Key>,
}

impl Default for Order {
    fn default() -> Self {
        Order {
            sections: BTreeMap::new(),
            todo: vec![Key::new()],
        }
    }
}

impl Order {
    /// Whether the section `key` has been printed (or passed).
    fn passed(&self, key: &Key) -> bool {
        self.todo.last().is_none_or(|next| key < next)
    }

    /// A line of the directory `dir` (its own line when `name` is `None`): the lines
    /// that can be printed now.
    pub fn line(&mut self, dir: Key, name: Option<OsString>, line: Line) -> Vec<Line> {
        // A late line waits for the whole section, the others for the names before.
        let now = self.passed(&dir)
            || self.todo.last() == Some(&dir)
                && self.sections.get(&dir).is_some_and(|s| match line.late {
                    false => s.past(name.as_ref()),
                    true => s.started && s.queued.is_empty(),
                });
        if now {
            return vec![line];
        }
        let s = self.sections.entry(dir).or_default();
        match name {
            None => s.head.push(line),
            Some(n) if line.late => s.late.entry(n).or_default().push(line),
            Some(n) => s.files.entry(n).or_default().push(line),
        }
        Vec::new()
    }

    /// The directory `dir` was listed: these subdirectories will be walked and the
    /// entries `files` were queued.
    pub fn listed(
        &mut self,
        dir: Key,
        mut subdirs: Vec<OsString>,
        files: Vec<OsString>,
    ) -> Vec<Line> {
        if self.passed(&dir) {
            return Vec::new();
        }
        let s = self.sections.entry(dir).or_default();
        s.subdirs.append(&mut subdirs);
        s.subdirs.sort_unstable();
        s.subdirs.dedup();
        s.queued.extend(files);
        s.closed = true;
        self.pump()
    }

    /// The directory `dir` will get no more entries (its scan ended, listed or not).
    pub fn closed(&mut self, dir: Key) -> Vec<Line> {
        if self.passed(&dir) {
            return Vec::new();
        }
        self.sections.entry(dir).or_default().closed = true;
        self.pump()
    }

    /// The entry `name` queued in `dir` is done.
    pub fn entry_done(&mut self, dir: &Key, name: &OsString) -> Vec<Line> {
        match self.sections.get_mut(dir) {
            Some(s) => s.queued.remove(name),
            None => return Vec::new(),
        };
        self.pump()
    }

    /// Every line held, in order: the run is over.
    pub fn finish(&mut self) -> Vec<Line> {
        self.todo.clear();
        std::mem::take(&mut self.sections)
            .into_values()
            .flat_map(Section::lines)
            .collect()
    }

    /// The lines that can be printed now.
    fn pump(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        loop {
            let Some(next) = self.todo.last() else {
                out.extend(self.finish());
                return out;
            };
            // Sections no walk leads to, which the walk has gone past.
            while let Some(e) = self.sections.first_entry() {
                if e.key() >= next {
                    break;
                }
                out.extend(e.remove().lines());
            }
            let Some(s) = self.sections.get_mut(next).filter(|s| s.closed) else {
                return out;
            };
            s.started = true;
            out.extend(s.due());
            if !s.queued.is_empty() {
                return out;
            }
            let key = self.todo.pop().unwrap();
            let s = self.sections.remove(&key).unwrap();
            for d in s.subdirs.iter().rev() {
                let mut k = key.clone();
                k.push(d.clone());
                self.todo.push(k);
            }
            out.extend(s.lines());
        }
    }
}

impl Output {
    /// Whether per-file lines are put in rsync's order: when there are any, and no
    /// `--progress` numbers them as they are sent.
    pub fn ordered(&self) -> bool {
        (self.format.is_some() || self.log.is_some()) && self.file_progress.is_none()
    }

    /// Prints held lines now due (with the order's lock held, so they stay in order).
    pub(super) fn print_lines(&self, lines: Vec<Line>) {
        for l in lines {
            if let (Some(log), Some(line)) = (&self.log, l.log) {
                log.line(&line);
            }
            if let Some((to_stderr, line)) = l.out {
                self.emit(to_stderr, line);
            }
        }
    }

    /// The directory `rel` was listed: `subdirs` will be walked, the entries `files`
    /// were queued.
    pub fn listed(&self, rel: &Path, subdirs: Vec<OsString>, files: Vec<OsString>) {
        if self.ordered() {
            let mut held = self.order.lock().unwrap();
            let ready = held.listed(key(rel), subdirs, files);
            self.print_lines(ready);
        }
    }

    /// Held until dropped: the directory `rel` is walked, and gets no entry after.
    pub fn walking(&self, rel: &Path) -> Done<'_> {
        Done {
            out: self,
            dir: self.ordered().then(|| (key(rel), None)),
        }
    }

    /// Held until dropped: an entry of the directory `parent` is worked on.
    pub fn working(&self, parent: &Path, name: &OsStr) -> Done<'_> {
        Done {
            out: self,
            dir: self.ordered().then(|| (key(parent), Some(name.to_owned()))),
        }
    }

    /// The run is over: every line held is printed.
    pub fn flush(&self) {
        let mut held = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let ready = held.finish();
        self.print_lines(ready);
    }
}

/// The end of a directory's walk or of an entry's job, for the order of the lines.
pub struct Done<'a> {
    out: &'a Output,
    /// The directory, and the entry of it that is done (else its walk).
    dir: Option<(Key, Option<OsString>)>,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let Some((dir, entry)) = self.dir.take() else {
            return;
        };
        let mut held = self.out.order.lock().unwrap_or_else(|e| e.into_inner());
        let ready = match entry {
            Some(name) => held.entry_done(&dir, &name),
            None => held.closed(dir),
        };
        self.out.print_lines(ready);
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line {
        Line {
            log: None,
            out: Some((false, text.as_bytes().to_vec())),
            late: false,
        }
    }

    fn texts(lines: Vec<Line>) -> Vec<String> {
        lines
            .into_iter()
            .map(|l| String::from_utf8(l.out.unwrap().1).unwrap())
            .collect()
    }

    fn k(p: &str) -> Key {
        key(Path::new(p))
    }

    #[test]
    fn lines_come_in_rsyncs_order_whatever_order_they_are_done_in() {
        let mut o = Order::default();
        let mut got = Vec::new();
        got.extend(texts(o.line(k("./"), None, line("./"))));
        got.extend(texts(o.listed(
            k(""),
            vec!["b".into(), "a".into()],
            names(&["m", "z"]),
        )));
        // The subdirectories finish first.
        got.extend(texts(o.line(k("b"), None, line("b/"))));
        got.extend(texts(o.line(k("b"), Some("x".into()), line("b/x"))));
        got.extend(texts(o.listed(k("b"), vec![], names(&["x"]))));
        got.extend(texts(o.entry_done(&k("b"), &"x".into())));
        got.extend(texts(o.line(k("a"), None, line("a/"))));
        got.extend(texts(o.closed(k("a"))));
        // The top's own line is due once it is listed; nothing else yet.
        assert_eq!(got, ["./"]);
        got.extend(texts(o.line(k(""), Some("z".into()), line("z"))));
        got.extend(texts(o.entry_done(&k(""), &"z".into())));
        assert_eq!(got, ["./"]);
        got.extend(texts(o.line(k(""), Some("m".into()), line("m"))));
        got.extend(texts(o.entry_done(&k(""), &"m".into())));
        assert_eq!(got, ["./", "m", "z", "a/", "b/", "b/x"]);
        // A late line of a section printed already is printed at once.
        assert_eq!(
            texts(o.line(k("a"), Some("q".into()), line("a/q"))),
            ["a/q"]
        );
    }

    #[test]
    fn the_end_prints_what_is_held() {
        let mut o = Order::default();
        assert!(o.line(k("a"), Some("f".into()), line("a/f")).is_empty());
        assert!(o.line(k(""), Some("f".into()), line("f")).is_empty());
        assert!(
            o.listed(k(""), vec!["a".into()], names(&["f", "g"]))
                .is_empty()
        );
        assert_eq!(texts(o.finish()), ["f", "a/f"]);
    }

    #[test]
    fn sections_no_walk_leads_to_are_printed_when_passed() {
        let mut o = Order::default();
        // `-d`: a directory's line, no walk into it.
        assert!(o.line(k("d"), None, line("d/")).is_empty());
        assert!(o.line(k(""), Some("f".into()), line("f")).is_empty());
        assert_eq!(texts(o.listed(k(""), vec![], vec![])), ["f", "d/"]);
    }

    #[test]
    fn a_directorys_lines_flow_as_the_names_before_them_are_done() {
        let mut o = Order::default();
        assert!(o.listed(k(""), vec![], names(&["a", "b", "c"])).is_empty());
        assert!(o.line(k(""), Some("b".into()), line("b")).is_empty());
        assert!(o.entry_done(&k(""), &"b".into()).is_empty());
        assert_eq!(texts(o.entry_done(&k(""), &"a".into())), ["b"]);
        // Before the first name not done: at once.
        assert_eq!(texts(o.line(k(""), Some("a".into()), line("a"))), ["a"]);
        assert!(o.line(k(""), Some("c".into()), line("c")).is_empty());
        assert_eq!(texts(o.entry_done(&k(""), &"c".into())), ["c"]);
    }

    /// rsync's `-vv`: what was sent is named after the directory's up-to-date lines.
    #[test]
    fn late_lines_follow_the_directorys_other_lines() {
        let late = |t: &str| Line {
            late: true,
            ..line(t)
        };
        let mut o = Order::default();
        let mut got = Vec::new();
        got.extend(texts(o.listed(
            k(""),
            vec!["s".into()],
            names(&["a", "b", "c"]),
        )));
        got.extend(texts(o.line(
            k(""),
            Some("a".into()),
            line("a is uptodate"),
        )));
        got.extend(texts(o.entry_done(&k(""), &"a".into())));
        got.extend(texts(o.line(k(""), Some("b".into()), late("b"))));
        got.extend(texts(o.entry_done(&k(""), &"b".into())));
        assert_eq!(got, ["a is uptodate"]);
        got.extend(texts(o.line(
            k(""),
            Some("c".into()),
            line("c is uptodate"),
        )));
        got.extend(texts(o.line(k("s"), None, line("s/"))));
        got.extend(texts(o.entry_done(&k(""), &"c".into())));
        assert_eq!(got, ["a is uptodate", "c is uptodate", "b"]);
        // Once the directory is done, a late line is printed at once.
        assert!(o.listed(k("s"), vec![], names(&["x"])).len() == 1);
        assert_eq!(
            texts(o.entry_done(&k("s"), &"x".into())),
            Vec::<String>::new()
        );
        assert_eq!(texts(o.line(k(""), Some("z".into()), late("z"))), ["z"]);
    }

    fn names(n: &[&str]) -> Vec<OsString> {
        n.iter().map(OsString::from).collect()
    }
}
