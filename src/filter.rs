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
use std::path::Path;

use regex::bytes::Regex;

/// Translates one rsync pattern body (without the anchoring `/` or the dirs-only `/`).
fn translate(pat: &str) -> String {
    let chars: Vec<char> = pat.chars().collect();
    let mut re = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '/' if chars[i + 1..] == ['*', '*', '*'] => {
                re.push_str("(?:/.*)?");
                i += 4;
                continue;
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                re.push_str(".*");
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                re.push_str(&regex::escape(&chars[i].to_string()));
            }
            '[' => {
                // Find the closing bracket; a `]` right after `[`, `[!` or `[^` is literal.
                let mut j = i + 1;
                if matches!(chars.get(j), Some('!') | Some('^')) {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    re.push_str("\\[");
                } else {
                    let mut class = String::from("[");
                    let mut k = i + 1;
                    if matches!(chars[k], '!' | '^') {
                        class.push('^');
                        k += 1;
                    }
                    for &ch in &chars[k..j] {
                        if matches!(ch, '\\' | '[' | ']' | '&' | '~' | '^') {
                            class.push('\\');
                        }
                        class.push(ch);
                    }
                    class.push(']');
                    // A class never matches the separator.
                    re.push_str(&format!("[{class}&&[^/]]"));
                    i = j;
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
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
    /// Adds a rule; `include` is false for `--exclude`.
    pub fn add(&mut self, pattern: &str, include: bool) -> Result<(), regex::Error> {
        let dir_only = pattern.len() > 1 && pattern.ends_with('/') && !pattern.ends_with("\\/");
        let pat = if dir_only {
            &pattern[..pattern.len() - 1]
        } else {
            pattern
        };
        let re = match pat.strip_prefix('/') {
            Some(anchored) => format!("^{}$", translate(anchored)),
            // Unanchored: matches the last components of the path.
            None => format!("(?:^|/){}$", translate(pat)),
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
    pub fn add_from_reader(&mut self, r: impl BufRead) -> io::Result<()> {
        for line in r.lines() {
            let line = line?;
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let (include, pat) = if let Some(p) = line.strip_prefix("+ ") {
                (true, p)
            } else if let Some(p) = line.strip_prefix("- ") {
                (false, p)
            } else {
                (false, line)
            };
            self.add(pat, include)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        Ok(())
    }

    /// True when there are no rules (the common case: skip matching entirely).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `rel` (relative to the transfer root) is excluded.
    pub fn is_excluded(&self, rel: &Path, is_dir: bool) -> bool {
        for rule in &self.rules {
            if rule.dir_only && !is_dir {
                continue;
            }
            if rule.matcher.is_match(rel.as_os_str().as_encoded_bytes()) {
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
    fn exclude_from_reads_rsync_filter_lines() {
        let mut f = Filter::default();
        f.add_from_reader("# comment\n\n+ keep.tmp\n- *.tmp\n*.bak\n".as_bytes())
            .unwrap();
        assert!(!f.is_excluded(Path::new("keep.tmp"), false));
        assert!(f.is_excluded(Path::new("x.tmp"), false));
        assert!(f.is_excluded(Path::new("x.bak"), false));
    }
}
