//! The per-file lines in rsync's order while the copy runs in parallel.
//!
//! rsync prints a directory's line, then its other entries by name, then each
//! subdirectory's section the same way: the pre-order of the tree with a directory's
//! non-directories first. Scripts that diff two runs' `-i` output, and rsync's own
//! tests, read that order. Here each directory is a section keyed by its path's
//! components; comparing keys as sequences is exactly that pre-order. Lines wait in
//! their section until every section before it has been printed and its own entries
//! are done, so what is held is only the lines that cannot be printed yet, and a
//! line for a section already passed is printed at once. Whatever is still held when
//! the run ends is printed then, in the same order: no line is ever lost.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path};

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
}

#[derive(Default)]
struct Section {
    /// The directory's own line.
    head: Vec<Line>,
    /// Its other entries' lines, by name.
    files: BTreeMap<OsString, Vec<Line>>,
    /// Its subdirectories that will be walked.
    subdirs: Vec<OsString>,
    /// Its listing is done (or failed): no entry or subdirectory is added.
    closed: bool,
    /// Entries queued and not yet done.
    files_left: usize,
}

impl Section {
    fn lines(self) -> impl Iterator<Item = Line> {
        self.head
            .into_iter()
            .chain(self.files.into_values().flatten())
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
        if self.passed(&dir) {
            return vec![line];
        }
        let s = self.sections.entry(dir).or_default();
        match name {
            None => s.head.push(line),
            Some(n) => s.files.entry(n).or_default().push(line),
        }
        Vec::new()
    }

    /// The directory `dir` was listed: these subdirectories will be walked and
    /// `files` other entries were queued.
    pub fn listed(&mut self, dir: Key, mut subdirs: Vec<OsString>, files: usize) -> Vec<Line> {
        if self.passed(&dir) {
            return Vec::new();
        }
        let s = self.sections.entry(dir).or_default();
        s.subdirs.append(&mut subdirs);
        s.subdirs.sort_unstable();
        s.subdirs.dedup();
        s.files_left += files;
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

    /// One entry queued in `dir` is done.
    pub fn entry_done(&mut self, dir: &Key) -> Vec<Line> {
        match self.sections.get_mut(dir) {
            Some(s) => s.files_left = s.files_left.saturating_sub(1),
            None => return Vec::new(),
        }
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
            match self.sections.get(next) {
                Some(s) if s.closed && s.files_left == 0 => {}
                _ => return out,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line {
        Line {
            log: None,
            out: Some((false, text.as_bytes().to_vec())),
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
        got.extend(texts(o.listed(k(""), vec!["b".into(), "a".into()], 2)));
        // The subdirectories finish first.
        got.extend(texts(o.line(k("b"), None, line("b/"))));
        got.extend(texts(o.line(k("b"), Some("x".into()), line("b/x"))));
        got.extend(texts(o.listed(k("b"), vec![], 1)));
        got.extend(texts(o.entry_done(&k("b"))));
        got.extend(texts(o.line(k("a"), None, line("a/"))));
        got.extend(texts(o.closed(k("a"))));
        assert!(got.is_empty(), "{got:?}");
        got.extend(texts(o.line(k(""), Some("z".into()), line("z"))));
        got.extend(texts(o.entry_done(&k(""))));
        assert!(got.is_empty(), "{got:?}");
        got.extend(texts(o.line(k(""), Some("m".into()), line("m"))));
        got.extend(texts(o.entry_done(&k(""))));
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
        assert!(o.listed(k(""), vec!["a".into()], 2).is_empty());
        assert_eq!(texts(o.finish()), ["f", "a/f"]);
    }

    #[test]
    fn sections_no_walk_leads_to_are_printed_when_passed() {
        let mut o = Order::default();
        // `-d`: a directory's line, no walk into it.
        assert!(o.line(k("d"), None, line("d/")).is_empty());
        assert!(o.line(k(""), Some("f".into()), line("f")).is_empty());
        assert_eq!(texts(o.listed(k(""), vec![], 0)), ["f", "d/"]);
    }
}
