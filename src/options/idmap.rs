//! rsync's `--usermap`, `--groupmap` and `--chown`: the owner and group each entry
//! gets, from the source's by a list of `FROM:TO` rules (the first match wins).
//!
//! FROM is an id, an inclusive range `LOW-HIGH`, or a name (wildcards `*` `?`
//! allowed) matched against the source's name for the id; an id with no name (or
//! every id under `--numeric-ids`) has the empty name, so `*` matches everything and
//! an empty FROM only the nameless. TO is a name or an id, looked up once when the
//! command line is read. `--chown=U:G` is `--usermap=*:U --groupmap=*:G`.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::{Arc, Mutex};

/// What a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum From {
    Id(u32),
    Range(u32, u32),
    /// A name or a wildcard pattern over names.
    Name(Vec<u8>),
}

/// Users or groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    /// The user database (`--usermap`, `--chown USER`).
    Users,
    /// The group database (`--groupmap`, `--chown :GROUP`).
    Groups,
}

/// One parsed `--usermap` or `--groupmap`.
#[derive(Clone, Debug)]
pub struct IdMap {
    rules: Vec<(From, u32)>,
    db: Db,
    /// Names of source ids, looked up once each (workers share it).
    names: Arc<Mutex<HashMap<u32, Vec<u8>>>>,
}

impl IdMap {
    /// Parses `FROM:TO,...`.
    pub fn parse(spec: &str, db: Db) -> Result<IdMap, String> {
        let opt = match db {
            Db::Users => "--usermap",
            Db::Groups => "--groupmap",
        };
        let mut rules = Vec::new();
        for pair in spec.split(',') {
            let bad = || format!("{opt}: {pair:?} is not FROM:TO");
            let (from, to) = pair.rsplit_once(':').ok_or_else(bad)?;
            if to.is_empty() {
                return Err(bad());
            }
            let from = match from.split_once('-') {
                Some((lo, hi)) if is_id(lo) && is_id(hi) => From::Range(
                    lo.parse().map_err(|_| bad())?,
                    hi.parse().map_err(|_| bad())?,
                ),
                _ if is_id(from) => From::Id(from.parse().map_err(|_| bad())?),
                _ => From::Name(from.as_bytes().to_vec()),
            };
            rules.push((from, lookup(to, db).map_err(|e| format!("{opt}: {e}"))?));
        }
        Ok(IdMap::from_rules(rules, db))
    }

    /// Every id to `to` (`--chown`).
    pub fn all_to(to: u32, db: Db) -> IdMap {
        IdMap::from_rules(vec![(From::Name(b"*".to_vec()), to)], db)
    }

    fn from_rules(rules: Vec<(From, u32)>, db: Db) -> IdMap {
        IdMap {
            rules,
            db,
            names: Arc::default(),
        }
    }

    /// The id an entry owned by `id` gets; `numeric`: `--numeric-ids` (no names).
    pub fn map(&self, id: u32, numeric: bool) -> u32 {
        for (from, to) in &self.rules {
            let hit = match from {
                From::Id(n) => id == *n,
                From::Range(lo, hi) => (*lo..=*hi).contains(&id),
                From::Name(pat) if numeric => wildmatch(pat, b""),
                From::Name(pat) => {
                    let mut names = self.names.lock().unwrap();
                    let name = names.entry(id).or_insert_with(|| name_of(id, self.db));
                    wildmatch(pat, name)
                }
            };
            if hit {
                return *to;
            }
        }
        id
    }
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `*` and `?` wildcards, the rest literal.
fn wildmatch(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| wildmatch(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && wildmatch(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && wildmatch(rest, &s[1..]),
    }
}

/// A number, or a name from the user or group database.
pub fn lookup(name: &str, db: Db) -> Result<u32, String> {
    if is_id(name) {
        return name.parse().map_err(|_| format!("bad id {name:?}"));
    }
    let what = match db {
        Db::Users => "user",
        Db::Groups => "group",
    };
    let unknown = || format!("unknown {what} {name:?}");
    let c = CString::new(name).map_err(|_| unknown())?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: the `_r` calls write only into the record and the buffer we own.
    let id = unsafe {
        match db {
            Db::Users => {
                let mut rec: libc::passwd = std::mem::zeroed();
                let mut out = std::ptr::null_mut();
                libc::getpwnam_r(c.as_ptr(), &mut rec, buf.as_mut_ptr(), buf.len(), &mut out);
                (!out.is_null()).then_some(rec.pw_uid)
            }
            Db::Groups => {
                let mut rec: libc::group = std::mem::zeroed();
                let mut out = std::ptr::null_mut();
                libc::getgrnam_r(c.as_ptr(), &mut rec, buf.as_mut_ptr(), buf.len(), &mut out);
                (!out.is_null()).then_some(rec.gr_gid)
            }
        }
    };
    id.ok_or_else(unknown)
}

/// The name of `id`, empty when it has none.
fn name_of(id: u32, db: Db) -> Vec<u8> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: as in `lookup`; the name is copied out before `buf` goes.
    unsafe {
        let name = match db {
            Db::Users => {
                let mut rec: libc::passwd = std::mem::zeroed();
                let mut out = std::ptr::null_mut();
                libc::getpwuid_r(id, &mut rec, buf.as_mut_ptr(), buf.len(), &mut out);
                (!out.is_null()).then_some(rec.pw_name)
            }
            Db::Groups => {
                let mut rec: libc::group = std::mem::zeroed();
                let mut out = std::ptr::null_mut();
                libc::getgrgid_r(id, &mut rec, buf.as_mut_ptr(), buf.len(), &mut out);
                (!out.is_null()).then_some(rec.gr_name)
            }
        };
        name.map(|n| CStr::from_ptr(n).to_bytes().to_vec())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_wins() {
        let m = IdMap::parse("0-99:65534,root:7,12345:8,*:9", Db::Users).unwrap();
        assert_eq!(m.map(0, false), 65534);
        assert_eq!(m.map(12345, false), 8);
        assert_eq!(m.map(4242, false), 9);
        let m = IdMap::parse("ro*:5,:6", Db::Users).unwrap();
        assert_eq!(m.map(0, false), 5);
        assert_eq!(m.map(0, true), 6, "--numeric-ids: no names");
        assert_eq!(m.map(4242, false), 6, "nameless");
        assert_eq!(
            IdMap::parse("nobody:0", Db::Users)
                .unwrap()
                .map(65534, false),
            0
        );
        assert_eq!(IdMap::all_to(3, Db::Groups).map(77, true), 3);
    }

    #[test]
    fn bad_maps_are_refused() {
        for bad in ["", "1", "1:", "1:no-such-user-here"] {
            assert!(IdMap::parse(bad, Db::Users).is_err(), "{bad}");
        }
        assert!(wildmatch(b"a?c*", b"abcdef") && !wildmatch(b"a?c", b"abcd"));
    }
}
