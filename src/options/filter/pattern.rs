//! One rsync pattern, compiled to a regex over the path below the transfer root.
//!
//! rsync's matching, which users' scripts depend on:
//! - a pattern starting with `/` is anchored at the root of the transfer (in a
//!   per-directory merge file: at that file's directory);
//! - a pattern with no `/` (other than a trailing one) matches the final name
//!   component at any depth; one with a `/` matches the end of the path;
//! - a trailing `/` matches directories only;
//! - `*` and `?` stop at `/`, `**` does not (so `a/**/b` needs a directory between `a`
//!   and `b`, unlike git's globs, while a leading `**/` also matches at the top),
//!   `dir/***` matches `dir` and everything in it, `[...]` is a character class, `\`
//!   escapes.
//!
//! Glob crates (globset included) give `**` git's meaning, so the patterns are
//! translated to `regex` (the engine globset itself is built on) here instead.

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

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    matcher: Regex,
    /// Trailing `/`: directories only.
    dir_only: bool,
    /// The `!` modifier: the rule applies where the pattern does not match.
    negate: bool,
}

impl Pattern {
    /// Compiles `pattern`; `prefix` (the directory of a per-directory merge file, below
    /// the transfer root, ending in `/`) is put before an anchored pattern, literally.
    pub fn new(pattern: &[u8], prefix: &[u8], negate: bool) -> Result<Pattern, regex::Error> {
        let dir_only = pattern.len() > 1 && pattern.ends_with(b"/") && !pattern.ends_with(b"\\/");
        let pat = if dir_only {
            &pattern[..pattern.len() - 1]
        } else {
            pattern
        };
        // Bytes, not Unicode; `.` must match a newline in a name too.
        let re = match pat.strip_prefix(b"/") {
            Some(anchored) => {
                let mut lit = String::new();
                for &b in prefix {
                    push_literal(&mut lit, b);
                }
                format!("(?s-u)^{lit}{}$", translate(anchored))
            }
            // rsync tries a leading `**` against the path with a `/` put before it, so
            // `**/x` matches a top-level `x` too.
            None if pat.starts_with(b"**") => format!("(?s-u)^{}$", translate_wild2_prefix(pat)),
            // Unanchored: matches the last components of the path.
            None => format!("(?s-u)(?:^|/){}$", translate(pat)),
        };
        Ok(Pattern {
            matcher: Regex::new(&re)?,
            dir_only,
            negate,
        })
    }

    /// Whether the rule applies to `rel` (the path below the transfer root).
    pub fn matches(&self, rel: &[u8], is_dir: bool) -> bool {
        if rel.is_empty() {
            return false;
        }
        if self.dir_only && !is_dir {
            // rsync: a dirs-only rule says "no match" of a file, and so its negation
            // matches every file.
            return self.negate;
        }
        self.matcher.is_match(rel) != self.negate
    }
}

/// `**REST` unanchored. rsync matches it against "/" + path, which holds when the
/// path matches `**REST`, or when REST starts with `/` and the path matches what follows.
fn translate_wild2_prefix(pat: &[u8]) -> String {
    let all = translate(pat);
    match all.strip_prefix(".*\\x2f") {
        Some(after_slash) => format!("(?:{all}|{after_slash})"),
        None => all,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pat: &str, rel: &str, is_dir: bool) -> bool {
        Pattern::new(pat.as_bytes(), b"", false)
            .unwrap()
            .matches(rel.as_bytes(), is_dir)
    }

    #[test]
    fn basename_patterns_match_at_any_depth() {
        assert!(m("*.log", "a.log", false));
        assert!(m("*.log", "x/y/a.log", false));
        assert!(!m("*.log", "x/a.txt", false));
    }

    #[test]
    fn leading_slash_anchors_at_root_or_at_the_prefix() {
        assert!(m("/top", "top", true));
        assert!(!m("/top", "sub/top", true));
        let p = Pattern::new(b"/top", b"sub/", false).unwrap();
        assert!(p.matches(b"sub/top", false));
        assert!(!p.matches(b"top", false));
    }

    #[test]
    fn trailing_slash_is_dirs_only_and_negation_flips_it() {
        assert!(m("cache/", "a/cache", true));
        assert!(!m("cache/", "a/cache", false));
        let p = Pattern::new(b"*/", b"", true).unwrap();
        assert!(p.matches(b"file", false));
        assert!(!p.matches(b"dir", true));
    }

    #[test]
    fn star_does_not_cross_slash_but_double_star_does() {
        assert!(m("/a/*", "a/b", false));
        assert!(!m("/a/*", "a/b/c", false));
        assert!(m("/a/**", "a/b/c", false));
    }

    #[test]
    fn slash_patterns_match_the_end_of_the_path() {
        assert!(m("lib/*.js", "pkg/lib/x.js", false));
        assert!(m("lib/*.js", "lib/x.js", false));
        assert!(!m("lib/*.js", "pkg/lib/sub/x.js", false));
    }

    #[test]
    fn double_star_needs_a_directory_between_and_triple_star_takes_the_dir() {
        assert!(m("gen/**/z.rs", "gen/x/z.rs", false));
        assert!(m("gen/**/z.rs", "gen/x/y/z.rs", false));
        assert!(!m("gen/**/z.rs", "gen/z.rs", false));
        assert!(m("/a/**.tmp", "a/b/c/d.tmp", false));
        assert!(m("/dir/***", "dir", true));
        assert!(m("/dir/***", "dir/x/y", false));
        assert!(!m("/dir/***", "dirx", true));
    }

    #[test]
    fn leading_double_star_matches_at_the_top_too() {
        assert!(m("**/z", "z", false));
        assert!(m("**/z", "a/b/z", false));
        assert!(!m("**/z", "a/bz", false));
        assert!(m("**z", "a/bz", false));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(m("f[12].ba?", "sub/f2.bak", false));
        assert!(!m("f[12].ba?", "f3.bak", false));
        assert!(m("[!a]x", "bx", false));
        assert!(!m("[!a]x", "ax", false));
        assert!(m("lit\\*", "lit*", false));
        assert!(!m("lit\\*", "litx", false));
    }

    #[test]
    fn non_utf8_names_and_patterns_match_bytewise() {
        let p = |pat: &[u8]| Pattern::new(pat, b"", false).unwrap();
        assert!(p(b"*.log").matches(b"x\xff.log", false));
        assert!(p(b"caf\xe9").matches(b"d/caf\xe9", false));
        assert!(!p(b"caf\xe9").matches(b"cafe", false));
        assert!(p(b"caf?").matches(b"caf\xe9", false));
        assert!(p(b"a*b").matches(b"a\nb", false));
    }
}
