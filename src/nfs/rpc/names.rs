//! Names a server lists, checked where they enter the process.
//!
//! Plain NFS authenticates nothing a server sends: a compromised filer, a buggy one, or
//! anyone on the path can put `../../x`, `/etc/cron.d/zz`, an empty name or a NUL in a
//! READDIR reply, and every such name later becomes a path on the local disk or a call
//! to the server. rsync's receiver refuses a sender's name that is not one component
//! (CVE-2024-12087 is that class); nfsync refuses it the moment the listing is decoded,
//! for a source and a destination alike, so nothing downstream ever holds one.
//!
//! The same intake catches a listing that loops: a page cookie asked for twice, or the
//! same names listed again and again, end that directory's listing with an error
//! instead of running to the entry cap.

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::io;

use crate::name::{Why, check, escape};

/// Entries one directory may list before it is taken for a server that never ends.
pub const MAX_DIR_ENTRIES: usize = 100_000_000;

/// Names listed a second time before a listing is taken for a loop: an honest server
/// lists each name once, so even one is refused; this many is a server going round.
const MAX_REPEATS: usize = 1_000;

/// A listed name that was refused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub name: Vec<u8>,
    pub why: Why,
}

impl Refused {
    /// The entry's error: names the name escaped as rsync escapes one (a name is
    /// whatever bytes the server chose, terminal escapes included).
    pub fn to_io(&self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self.to_string())
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused the name \"{}\" the server listed: {}",
            escape(&self.name),
            self.why
        )
    }
}

/// A listing that is refused whole: the server's pages go round.
pub fn looping(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the server's {what} pages go round (a looping or lying server)"),
    )
}

/// One directory's listing as its pages come in: each name checked, and the pages
/// watched for a server that goes round.
pub struct Intake {
    /// `.` and `..` as NFSv3 servers list them in every directory: skipped once each.
    dots_listed: bool,
    dots: [bool; 2],
    /// Hashes of the names kept (eight bytes an entry, not a second copy of each name):
    /// a repeat is confirmed by name in [`Intake::finish`].
    hashes: HashSet<u64>,
    hasher: RandomState,
    repeats: usize,
    cookies: HashSet<u64>,
    kept: usize,
    refused: Vec<Refused>,
    what: &'static str,
}

impl Intake {
    /// A listing by `what` (READDIR, READDIRPLUS); `dots_listed` when the protocol's
    /// servers list `.` and `..` themselves (NFSv3), where they are skipped once; an
    /// NFSv4.1 server never lists them (RFC 8881), so there they are refused.
    pub fn new(what: &'static str, dots_listed: bool) -> Intake {
        Intake {
            dots_listed,
            dots: [false; 2],
            hashes: HashSet::new(),
            hasher: RandomState::new(),
            repeats: 0,
            cookies: HashSet::new(),
            kept: 0,
            refused: Vec::new(),
            what,
        }
    }

    /// Whether the entry `name` is kept; a refused one is noted, the dots are skipped.
    /// An error when the names repeat so often that the server is going round.
    pub fn admit(&mut self, name: &[u8]) -> io::Result<bool> {
        if self.dots_listed && (name == b"." || name == b"..") {
            let seen = &mut self.dots[name.len() - 1];
            if !*seen {
                *seen = true;
                return Ok(false);
            }
            return self.repeat(name);
        }
        if let Err(why) = check(name) {
            self.refused.push(Refused {
                name: name.to_vec(),
                why,
            });
            return Ok(false);
        }
        if !self.hashes.insert(self.hasher.hash_one(name)) {
            // A collision of two honest names is kept; `finish` tells them apart.
            self.repeats += 1;
            if self.repeats > MAX_REPEATS {
                return Err(looping(self.what));
            }
        }
        self.kept += 1;
        if self.kept > MAX_DIR_ENTRIES {
            return Err(looping(self.what));
        }
        Ok(true)
    }

    fn repeat(&mut self, name: &[u8]) -> io::Result<bool> {
        self.repeats += 1;
        if self.repeats > MAX_REPEATS {
            return Err(looping(self.what));
        }
        if !self.refused.iter().any(|r| r.name == name) {
            self.refused.push(Refused {
                name: name.to_vec(),
                why: Why::Twice,
            });
        }
        Ok(false)
    }

    /// The next page is asked for at `cookie`: an error when a page of this listing
    /// was asked for there already (a server whose cookies go A → B → A).
    pub fn next_page(&mut self, cookie: u64) -> io::Result<()> {
        match self.cookies.insert(cookie) {
            true => Ok(()),
            false => Err(looping(self.what)),
        }
    }

    /// The kept entries, each name once: a name listed more than once is refused
    /// (every copy: which of them is true cannot be told), with the names refused on
    /// the way. Sorted by name, the order the walk wants anyway.
    pub fn finish<E>(self, mut kept: Vec<E>, name: impl Fn(&E) -> &[u8]) -> (Vec<E>, Vec<Refused>) {
        let mut refused = self.refused;
        if self.repeats > 0 {
            kept.sort_by(|a, b| name(a).cmp(name(b)));
            let mut twice: Vec<Vec<u8>> = Vec::new();
            for w in kept.windows(2) {
                if name(&w[0]) == name(&w[1]) && twice.last().map(|t| &t[..]) != Some(name(&w[0])) {
                    twice.push(name(&w[0]).to_vec());
                }
            }
            if !twice.is_empty() {
                kept.retain(|e| twice.binary_search_by(|t| t[..].cmp(name(e))).is_err());
                refused.extend(twice.into_iter().map(|name| Refused {
                    name,
                    why: Why::Twice,
                }));
            }
        }
        (kept, refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_escapes_the_name() {
        let r = Refused {
            name: b"\x1b]0;x\x07/..".to_vec(),
            why: Why::Slash,
        };
        let line = r.to_string();
        assert!(!line.bytes().any(|b| b < 0x20), "{line:?}");
        assert!(line.contains("\\#033]0;x\\#007/.."), "{line}");
    }

    fn names(v: &[&[u8]]) -> Vec<Vec<u8>> {
        v.iter().map(|n| n.to_vec()).collect()
    }

    #[test]
    fn v3_dots_are_skipped_once_then_refused() {
        let mut i = Intake::new("READDIRPLUS", true);
        let mut kept = Vec::new();
        for n in names(&[b".", b"..", b"a", b"..", b"b"]) {
            if i.admit(&n).unwrap() {
                kept.push(n);
            }
        }
        let (kept, refused) = i.finish(kept, |n| n);
        assert_eq!(kept, names(&[b"a", b"b"]));
        assert_eq!(
            refused,
            vec![Refused {
                name: b"..".to_vec(),
                why: Why::Twice
            }]
        );
    }

    #[test]
    fn v4_dots_are_refused() {
        let mut i = Intake::new("READDIR", false);
        assert!(!i.admit(b"..").unwrap());
        assert!(!i.admit(b".").unwrap());
        let (_, refused) = i.finish(Vec::<Vec<u8>>::new(), |n| n);
        assert_eq!(refused.len(), 2);
        assert!(refused.iter().all(|r| r.why == Why::Dot));
    }

    #[test]
    fn a_name_listed_twice_is_refused_every_time() {
        let mut i = Intake::new("READDIR", false);
        let mut kept = Vec::new();
        for n in names(&[b"b", b"dup", b"a", b"dup", b"../x"]) {
            if i.admit(&n).unwrap() {
                kept.push(n);
            }
        }
        let (kept, refused) = i.finish(kept, |n| n);
        assert_eq!(kept, names(&[b"a", b"b"]));
        let whys: Vec<_> = refused.iter().map(|r| (r.name.clone(), r.why)).collect();
        assert_eq!(
            whys,
            vec![
                (b"../x".to_vec(), Why::Slash),
                (b"dup".to_vec(), Why::Twice)
            ]
        );
    }

    #[test]
    fn a_cookie_asked_twice_is_a_loop() {
        let mut i = Intake::new("READDIR", false);
        i.next_page(7).unwrap();
        i.next_page(9).unwrap();
        let e = i.next_page(7).unwrap_err();
        assert!(e.to_string().contains("go round"), "{e}");
    }

    #[test]
    fn names_repeating_without_end_are_a_loop() {
        let mut i = Intake::new("READDIR", false);
        let mut n = 0u64;
        let end = loop {
            // The same ten names with fresh cookies, as a server going round would.
            match i.admit(format!("f{}", n % 10).as_bytes()) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
            assert!(n < 10_000, "never ended");
        };
        assert!(end.to_string().contains("go round"), "{end}");
    }
}
