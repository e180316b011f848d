//! The module graph of `src/` has no cycle, and the NFS client's layers point one way.
//!
//! A cycle between modules means neither can be read, tested or moved without the other;
//! the NFS client is meant to become its own crate one day, which a cycle through it
//! would forbid. The compiler accepts cycles, so this test is what stops a new one.
//!
//! The graph is read from the source text: a node per file (`src/a/b.rs` and
//! `src/a/b/mod.rs` are module `a::b`), an edge for each `crate::`, `super::` or
//! `self::` path (in `use` trees and in code) to the longest module prefix it names.
//! A module naming one of its own ancestors is not an edge: that is where it lives
//! (`super::Engine`). Test-only files count like any other: nothing names them, so
//! they cannot close a cycle. `src/main.rs` is another crate and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Layer rules a cycle search cannot see: a module that must not name another even
/// one way. `nfs` (its `mod.rs`: the version choice) sits above both versions, which
/// sit above the RPC toolkit; neither version names the other.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("nfs::rpc", &["nfs", "nfs::v3", "nfs::v4"]),
    ("nfs::v3", &["nfs", "nfs::v4"]),
    ("nfs::v4", &["nfs", "nfs::v3"]),
];

/// One reference: which module names which, and where (for the message).
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

#[test]
fn src_has_no_module_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = check(&src);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn src_keeps_the_nfs_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = layer_breaks(&edges(&modules(&src)));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check finds what it is for: a planted two-module cycle, a three-module one
/// through `super::` and a nested `use` tree, and a version naming the other.
#[test]
fn a_planted_cycle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let put = |rel: &str, text: &str| {
        let p = src.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    put(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod nfs;\n",
    );
    put(
        "a.rs",
        "use crate::b::inner::thing;\n// crate::c::not_code\n",
    );
    put("b/mod.rs", "mod inner;\n");
    put(
        "b/inner.rs",
        "use crate::{c::{self, more}, x};\nfn f() { super::super::a::g() }\n",
    );
    put(
        "c.rs",
        "/* crate::a */ const S: &str = \"crate::a\";\nfn h() { crate::a::g(); }\n",
    );
    put("nfs/mod.rs", "pub mod v3;\npub mod v4;\n");
    put("nfs/v3/mod.rs", "use super::super::nfs::v4::Thing;\n");
    put("nfs/v4/mod.rs", "use crate::nfs::Dest;\n");
    let problems = check(src);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    for m in ["a", "b::inner", "c"] {
        assert!(problems[0].contains(m), "{m} missing in {}", problems[0]);
    }
    let breaks = layer_breaks(&edges(&modules(src)));
    assert_eq!(breaks.len(), 2, "{breaks:#?}");
}

/// Every cycle in the graph under `src`, one message each (empty: none).
fn check(src: &Path) -> Vec<String> {
    let modules = modules(src);
    let edges = edges(&modules);
    let mut out = Vec::new();
    for scc in strongly_connected(&modules, &edges) {
        let inside: BTreeSet<&str> = scc.iter().map(String::as_str).collect();
        let mut lines: Vec<String> = edges
            .iter()
            .filter(|e| inside.contains(e.from.as_str()) && inside.contains(e.to.as_str()))
            .map(|e| format!("    {} -> {} ({})", e.from, e.to, e.at))
            .collect();
        lines.dedup_by(|a, b| a.split(" (").next() == b.split(" (").next());
        out.push(format!(
            "module cycle among {}:\n{}",
            scc.join(", "),
            lines.join("\n")
        ));
    }
    out
}

/// Every reference that goes up the NFS layers or across between the versions.
fn layer_breaks(edges: &[Edge]) -> Vec<String> {
    let mut out = Vec::new();
    for e in edges.iter().chain(ancestor_edges(edges).iter()) {
        for (low, above) in FORBIDDEN {
            if within(&e.from, low) && above.iter().any(|a| is_forbidden(&e.to, a)) {
                out.push(format!(
                    "{} names {} ({}): {low} may not name {} (nfs → v3, v4 → rpc)",
                    e.from,
                    e.to,
                    e.at,
                    above.join(", ")
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `to` is the forbidden module: `nfs` forbids only `nfs/mod.rs` itself, a version
/// forbids all of that version.
fn is_forbidden(to: &str, forbidden: &str) -> bool {
    if forbidden == "nfs" {
        to == "nfs"
    } else {
        within(to, forbidden)
    }
}

/// The references to ancestors that [`edges`] drops, kept for the layer rules.
fn ancestor_edges(edges: &[Edge]) -> Vec<Edge> {
    edges
        .iter()
        .filter(|e| e.to.starts_with('\u{0}'))
        .map(|e| Edge {
            to: e.to[1..].to_string(),
            ..e.clone()
        })
        .collect()
}

fn within(module: &str, prefix: &str) -> bool {
    module == prefix || module.starts_with(&format!("{prefix}::"))
}

/// Module path → file, for every `.rs` file under `src` (the crate root is "").
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            match parts.last().map(String::as_str) {
                Some("main") if parts.len() == 1 => continue,
                Some("lib") if parts.len() == 1 => parts.clear(),
                Some("mod") => {
                    parts.pop();
                }
                _ => {}
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// Every reference from one module to another; a reference to an ancestor is kept
/// with its target prefixed by NUL (for the layer rules only, never a cycle).
fn edges(modules: &BTreeMap<String, PathBuf>) -> Vec<Edge> {
    let mut out = Vec::new();
    for (module, file) in modules {
        let text = code_only(&fs::read_to_string(file).unwrap());
        let here: Vec<&str> = if module.is_empty() {
            vec![]
        } else {
            module.split("::").collect()
        };
        for (line, path) in paths(&text) {
            let Some(abs) = absolute(&here, &path) else {
                continue;
            };
            let Some(to) = longest_module(modules, &abs) else {
                continue;
            };
            if to == *module {
                continue;
            }
            let at = format!(
                "{}:{}",
                file.file_name().unwrap().to_string_lossy(),
                line + 1
            );
            let to = if within(module, &to) || to.is_empty() {
                format!("\u{0}{to}")
            } else {
                to
            };
            out.push(Edge {
                from: module.clone(),
                to,
                at,
            });
        }
    }
    out
}

/// `path` (segments starting with `crate`, `super` or `self`) as segments from the root.
fn absolute(here: &[&str], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.iter().map(|s| s.to_string()).collect();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(seg) = rest.first() {
                match seg.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

fn longest_module(modules: &BTreeMap<String, PathBuf>, abs: &[String]) -> Option<String> {
    (0..=abs.len())
        .rev()
        .map(|n| abs[..n].join("::"))
        .find(|m| modules.contains_key(m))
}

/// Every `crate::`/`super::`/`self::` path in code, `use` trees expanded, with its line.
fn paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 0;
    while i < bytes.len() {
        if bytes[i] == '\n' {
            line += 1;
        }
        let start_ok = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != ':';
        if start_ok && starts_word(&bytes, i, "use") {
            let end = (i..bytes.len())
                .find(|&j| bytes[j] == ';')
                .unwrap_or(bytes.len());
            let tree: String = bytes[i + 3..end].iter().collect();
            for p in expand_use(&tree) {
                out.push((line, p));
            }
            line += bytes[i..end].iter().filter(|&&c| c == '\n').count();
            i = end;
            continue;
        }
        if start_ok {
            for root in ["crate", "super", "self"] {
                if starts_word(&bytes, i, root) && bytes.get(i + root.len()) == Some(&':') {
                    let mut j = i;
                    while j < bytes.len() && (is_ident(bytes[j]) || bytes[j] == ':') {
                        j += 1;
                    }
                    let p: String = bytes[i..j].iter().collect();
                    let segs: Vec<String> = p
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect();
                    out.push((line, segs));
                    i = j;
                    break;
                }
            }
        }
        i += 1;
    }
    out
}

fn starts_word(bytes: &[char], i: usize, word: &str) -> bool {
    let w: Vec<char> = word.chars().collect();
    bytes.len() >= i + w.len()
        && bytes[i..i + w.len()] == w[..]
        && bytes.get(i + w.len()).is_none_or(|c| !is_ident(*c))
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `crate::a::{b, c::{self, d}}` → `crate::a::b`, `crate::a::c`, `crate::a::c::d`.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut kept = String::new();
    let mut i = 0;
    while i < words.len() {
        // `a as b`: the path is `a`; the rename and its trailing `,` or `}` stay.
        if words[i] == "as" && i + 1 < words.len() {
            let tail = words[i + 1].trim_start_matches(|c: char| is_ident(c));
            kept.push_str(tail);
            i += 2;
            continue;
        }
        kept.push_str(words[i]);
        i += 1;
    }
    let tree = kept.trim_start_matches("::");
    let mut out = Vec::new();
    expand_into(&[], tree, &mut out);
    out
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    for part in split_top(tree) {
        if let Some(open) = part.find('{') {
            let head = part[..open].trim_end_matches("::");
            let inner = &part[open + 1..part.len() - 1];
            let mut p = prefix.to_vec();
            p.extend(head.split("::").filter(|s| !s.is_empty()).map(String::from));
            expand_into(&p, inner, out);
        } else {
            let mut p = prefix.to_vec();
            for seg in part.split("::").filter(|s| !s.is_empty()) {
                if seg == "self" && !p.is_empty() {
                    continue;
                }
                p.push(seg.to_string());
            }
            if !p.is_empty() {
                out.push(p);
            }
        }
    }
}

/// Splits a `use` list at its top-level commas.
fn split_top(tree: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&tree[start..]);
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// The text with comments and string/char literals blanked (newlines kept, for lines).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && matches!(c.get(i + 1), Some('"' | '#'))
            && (i == 0 || !is_ident(c[i - 1]))
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while j < c.len() && c[j..].len() >= close.len() && c[j..j + close.len()] != close[..] {
                j += 1;
            }
            j = (j + close.len()).min(c.len());
            out.extend(c[i..j].iter().map(|&ch| blank(ch)));
            i = j;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                if c[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            j = (j + 1).min(c.len());
            out.extend(c[i..j].iter().map(|&ch| blank(ch)));
            i = j;
        } else if c[i] == '\'' && is_char_literal(&c, i) {
            let mut j = i + 1;
            if c.get(j) == Some(&'\\') {
                j += 1;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            j = (j + 1).min(c.len());
            out.extend(c[i..j].iter().map(|&ch| blank(ch)));
            i = j;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `'x'` or `'\n'`, not a lifetime `'a`.
fn is_char_literal(c: &[char], i: usize) -> bool {
    match c.get(i + 1) {
        Some('\\') => true,
        Some(_) => c.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// Tarjan's strongly connected components of size > 1, each sorted, in module order.
fn strongly_connected(modules: &BTreeMap<String, PathBuf>, edges: &[Edge]) -> Vec<Vec<String>> {
    let names: Vec<&String> = modules.keys().collect();
    let index_of: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut adj = vec![BTreeSet::new(); names.len()];
    for e in edges {
        if let (Some(&a), Some(&b)) = (index_of.get(e.from.as_str()), index_of.get(e.to.as_str())) {
            adj[a].insert(b);
        }
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[BTreeSet<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &adj[v] {
            match s.index[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let n = names.len();
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, &adj, &mut s);
        }
    }
    let mut out: Vec<Vec<String>> = s
        .out
        .into_iter()
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}
