//! `--exclude` / `--include` rules with rsync's matching, compiled to regexes.
//!
//! rsync's rules, which users' scripts depend on:
//! - rules are tried in order and the first match decides;
//! - a pattern starting with `/` is anchored at the root of the transfer;
//! - a pattern with no `/` (other than a trailing one) matches the final name
//!   component at any depth; one with a `/` matches the end of the path;
//! - a trailing `/` matches directories only;
//! - `*` and `?` stop at `/`, `**` does not (so `a/**/b` needs a directory between `a`
//!   and `b`, unlike git's globs), `dir/***` matches `dir` and everything in it,
//!   `[...]` is a character class, `\` escapes.
//!
//! Glob crates (globset included) give `**` git's meaning, so the patterns are
//! translated to `regex` (the engine globset itself is built on) here instead.
//!
//! An excluded directory is not descended into, and `--delete` leaves excluded
//! destination entries alone, as rsync does without `--delete-excluded`.

use std::io::{self, BufRead};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use regex::bytes::Regex;

/// Writes byte `b` as a regex literal (names are bytes, not necessarily UTF-8).
fn push_literal(re: &mut String, b: u8) {
    if b.is_ascii_alphanumeric() || b == b'_' {
        re.push(b as char);
    } else {
        re.push_str(&format!("\\x{b:02x}"));
    }
}

/// Translates one rsync pattern body (without the anchoring `/` or the dirs-only `/`).
fn translate(pat: &[u8]) -> String {
    let mut re = String::new();
    let mut i = 0;
    while i < pat.len() {
        match pat[i] {
            b'/' if &pat[i + 1..] == b"***" => {
                re.push_str("(?:/.*)?");
                i += 4;
                continue;
            }
            b'*' if pat.get(i + 1) == Some(&b'*') => {
                re.push_str(".*");
                while pat.get(i) == Some(&b'*') {
                    i += 1;
                }
                continue;
            }
            b'*' => re.push_str("[^/]*"),
            b'?' => re.push_str("[^/]"),
            b'\\' if i + 1 < pat.len() => {
                i += 1;
                push_literal(&mut re, pat[i]);
            }
            b'[' => {
                // Find the closing bracket; a `]` right after `[`, `[!` or `[^` is literal.
                let mut j = i + 1;
                if matches!(pat.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if pat.get(j) == Some(&b']') {
                    j += 1;
                }
                while j < pat.len() && pat[j] != b']' {
                    j += 1;
                }
                if j >= pat.len() {
                    push_literal(&mut re, b'[');
                } else {
                    let mut k = i + 1;
                    let mut class = String::from("[");
                    if matches!(pat[k], b'!' | b'^') {
                        class.push('^');
                        k += 1;
                    }
                    for &b in &pat[k..j] {
                        if b == b'-' {
                            class.push('-');
                        } else {
                            push_literal(&mut class, b);
                        }
                    }
                    class.push(']');
                    // A class never matches the separator.
                    re.push_str(&format!("[{class}&&[^/]]"));
                    i = j;
                }
            }
            b => push_literal(&mut re, b),
        }
        i += 1;
    }
    re
}

#[derive(Clone, Debug)]
struct Rule {
    include: bool,
    dir_only: bool,
    matcher: Regex,
}

/// An ordered list of include/exclude rules.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    rules: Vec<Rule>,
}

impl Filter {
    /// Adds a rule; `include` is false for `--exclude`. Patterns are bytes, like the
    /// names they match.
    pub fn add(&mut self, pattern: impl AsRef<[u8]>, include: bool) -> Result<(), regex::Error> {
        let pattern = pattern.as_ref();
        let dir_only = pattern.len() > 1 && pattern.ends_with(b"/") && !pattern.ends_with(b"\\/");
        let pat = if dir_only {
            &pattern[..pattern.len() - 1]
        } else {
            pattern
        };
        // Bytes, not Unicode; `.` must match a newline in a name too.
        let re = match pat.strip_prefix(b"/") {
            Some(anchored) => format!("(?s-u)^{}$", translate(anchored)),
            // Unanchored: matches the last components of the path.
            None => format!("(?s-u)(?:^|/){}$", translate(pat)),
        };
        self.rules.push(Rule {
            include,
            dir_only,
            matcher: Regex::new(&re)?,
        });
        Ok(())
    }

    /// Reads `--exclude-from FILE` (`-` for stdin): one pattern per line; blank lines and
    /// lines starting with `#` or `;` are ignored; `+ PAT` and `- PAT` set the rule type
    /// as in rsync's filter files.
    pub fn add_from_reader(&mut self, mut r: impl BufRead) -> io::Result<()> {
        let mut line = Vec::new();
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            let mut l = line.as_slice();
            while let Some(rest) = l.strip_suffix(b"\n").or_else(|| l.strip_suffix(b"\r")) {
                l = rest;
            }
            if l.is_empty() || l.starts_with(b"#") || l.starts_with(b";") {
                continue;
            }
            let (include, pat) = if let Some(p) = l.strip_prefix(b"+ ") {
                (true, p)
            } else if let Some(p) = l.strip_prefix(b"- ") {
                (false, p)
            } else {
                (false, l)
            };
            self.add(pat, include)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
    }

    /// True when there are no rules (the common case: skip matching entirely).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `rel` (relative to the transfer root) is excluded.
    pub fn is_excluded(&self, rel: &Path, is_dir: bool) -> bool {
        let rel = rel.as_os_str().as_bytes();
        for rule in &self.rules {
            if rule.dir_only && !is_dir {
                continue;
            }
            if rule.matcher.is_match(rel) {
                return !rule.include;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(rules: &[(&str, bool)]) -> Filter {
        let mut f = Filter::default();
        for (p, inc) in rules {
            f.add(p, *inc).unwrap();
        }
        f
    }

    #[test]
    fn basename_patterns_match_at_any_depth() {
        let f = filter(&[("*.log", false)]);
        assert!(f.is_excluded(Path::new("a.log"), false));
        assert!(f.is_excluded(Path::new("x/y/a.log"), false));
        assert!(!f.is_excluded(Path::new("x/a.txt"), false));
    }

    #[test]
    fn leading_slash_anchors_at_root() {
        let f = filter(&[("/top", false)]);
        assert!(f.is_excluded(Path::new("top"), true));
        assert!(!f.is_excluded(Path::new("sub/top"), true));
    }

    #[test]
    fn trailing_slash_is_dirs_only() {
        let f = filter(&[("cache/", false)]);
        assert!(f.is_excluded(Path::new("a/cache"), true));
        assert!(!f.is_excluded(Path::new("a/cache"), false));
    }

    #[test]
    fn first_match_wins() {
        let f = filter(&[("keep.log", true), ("*.log", false)]);
        assert!(!f.is_excluded(Path::new("d/keep.log"), false));
        assert!(f.is_excluded(Path::new("d/other.log"), false));
    }

    #[test]
    fn star_does_not_cross_slash_but_double_star_does() {
        let f = filter(&[("/a/*", false)]);
        assert!(f.is_excluded(Path::new("a/b"), false));
        assert!(!f.is_excluded(Path::new("a/b/c"), false));
        let f = filter(&[("/a/**", false)]);
        assert!(f.is_excluded(Path::new("a/b/c"), false));
    }

    #[test]
    fn slash_patterns_match_the_end_of_the_path() {
        let f = filter(&[("lib/*.js", false)]);
        assert!(f.is_excluded(Path::new("pkg/lib/x.js"), false));
        assert!(f.is_excluded(Path::new("lib/x.js"), false));
        assert!(!f.is_excluded(Path::new("pkg/lib/sub/x.js"), false));
    }

    #[test]
    fn double_star_needs_a_directory_between_and_triple_star_takes_the_dir() {
        let f = filter(&[("gen/**/z.rs", false)]);
        assert!(f.is_excluded(Path::new("gen/x/z.rs"), false));
        assert!(f.is_excluded(Path::new("gen/x/y/z.rs"), false));
        assert!(!f.is_excluded(Path::new("gen/z.rs"), false));
        let f = filter(&[("/a/**.tmp", false)]);
        assert!(f.is_excluded(Path::new("a/b/c/d.tmp"), false));
        let f = filter(&[("/dir/***", false)]);
        assert!(f.is_excluded(Path::new("dir"), true));
        assert!(f.is_excluded(Path::new("dir/x/y"), false));
        assert!(!f.is_excluded(Path::new("dirx"), true));
    }

    #[test]
    fn classes_and_escapes() {
        let f = filter(&[("f[12].ba?", false), ("[!a]x", false), ("lit\\*", false)]);
        assert!(f.is_excluded(Path::new("sub/f2.bak"), false));
        assert!(!f.is_excluded(Path::new("f3.bak"), false));
        assert!(f.is_excluded(Path::new("bx"), false));
        assert!(!f.is_excluded(Path::new("ax"), false));
        assert!(f.is_excluded(Path::new("lit*"), false));
        assert!(!f.is_excluded(Path::new("litx"), false));
    }

    #[test]
    fn non_utf8_names_and_patterns_match_bytewise() {
        use std::ffi::OsStr;
        let name = |b: &[u8]| Path::new(OsStr::from_bytes(b)).to_path_buf();
        let f = filter(&[("*.log", false)]);
        assert!(f.is_excluded(&name(b"x\xff.log"), false));
        let mut f = Filter::default();
        f.add(b"caf\xe9", false).unwrap();
        assert!(f.is_excluded(&name(b"d/caf\xe9"), false));
        assert!(!f.is_excluded(&name(b"cafe"), false));
        let f = filter(&[("caf?", false)]);
        assert!(f.is_excluded(&name(b"caf\xe9"), false));
        let f = filter(&[("a*b", false)]);
        assert!(f.is_excluded(&name(b"a\nb"), false));
    }

    #[test]
    fn exclude_from_reads_rsync_filter_lines() {
        let mut f = Filter::default();
        f.add_from_reader("# comment\n\n+ keep.tmp\n- *.tmp\n*.bak\n".as_bytes())
            .unwrap();
        assert!(!f.is_excluded(Path::new("keep.tmp"), false));
        assert!(f.is_excluded(Path::new("x.tmp"), false));
        assert!(f.is_excluded(Path::new("x.bak"), false));
    }
}
