//! rsync's `--chmod`: mode changes applied to every source entry as it is listed, so
//! the destination gets (and the quick check compares) the changed mode, with or
//! without `-p` exactly as rsync does (without `-p` only new entries take it, less
//! the umask).
//!
//! Syntax (rsync's, like chmod(1)): a comma-separated list of clauses, each with an
//! optional `D` (directories only) or `F` (everything else) prefix, then either an
//! octal mode (`D755`) or `[ugoa]*` `+`/`-`/`=` `[rwxXst]*`. With no `ugoa`, the
//! umask is applied to the bits (`+x` adds only what the umask allows), as rsync does.

/// One parsed clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Clause {
    /// Applies to directories only / to non-directories only.
    dirs_only: bool,
    files_only: bool,
    /// Bits kept, then bits added.
    and: u32,
    or: u32,
    /// `X`: execute bits are added only to directories and to files already
    /// executable by someone.
    x_keep: bool,
}

/// A parsed `--chmod` list (several `--chmod` options append to it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chmod {
    clauses: Vec<Clause>,
}

impl Chmod {
    /// Parses one `--chmod` value onto the clauses already there; `umask` is the one
    /// nfsync started with.
    pub fn add(&mut self, spec: &str, umask: u32) -> Result<(), String> {
        let bad = || format!("invalid --chmod {spec:?} (e.g. D755,F644 or u+w,Dg+s,a-x)");
        for item in spec.split(',') {
            let mut c = Clause {
                dirs_only: false,
                files_only: false,
                and: 0o7777,
                or: 0,
                x_keep: false,
            };
            let mut rest = item;
            match rest.as_bytes().first() {
                Some(b'D') => (c.dirs_only, rest) = (true, &rest[1..]),
                Some(b'F') => (c.files_only, rest) = (true, &rest[1..]),
                _ => {}
            }
            if !rest.is_empty() && rest.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                let mode = u32::from_str_radix(rest, 8).map_err(|_| bad())?;
                if mode > 0o7777 {
                    return Err(bad());
                }
                (c.and, c.or) = (0, mode);
                self.clauses.push(c);
                continue;
            }
            let op_at = rest.find(['+', '-', '=']).ok_or_else(bad)?;
            let (who, what) = rest.split_at(op_at);
            let (op, perms) = (what.as_bytes()[0], &what[1..]);
            let (mut where_, mut top) = (0u32, 0u32);
            for b in who.bytes() {
                match b {
                    b'u' => (where_, top) = (where_ | 0o100, top | 0o4000),
                    b'g' => (where_, top) = (where_ | 0o010, top | 0o2000),
                    b'o' => where_ |= 0o001,
                    // rsync 3.4: a+s sets both setuid and setgid, as chmod(1).
                    b'a' => (where_, top) = (where_ | 0o111, top | 0o6000),
                    _ => return Err(bad()),
                }
            }
            let (mut what, mut special) = (0u32, 0u32);
            for b in perms.bytes() {
                match b {
                    b'r' => what |= 4,
                    b'w' => what |= 2,
                    b'x' => what |= 1,
                    b'X' => (what, c.x_keep) = (what | 1, true),
                    b's' => special |= if top != 0 { top } else { 0o4000 },
                    b't' => special |= 0o1000,
                    _ => return Err(bad()),
                }
            }
            let bits = if where_ != 0 {
                where_ * what
            } else {
                where_ = 0o111;
                (where_ * what) & !umask
            };
            (c.and, c.or) = match op {
                b'+' => (0o7777, bits | special),
                b'-' => (0o7777 & !(bits | special), 0),
                _ => {
                    let cleared = (where_ * 7) | if special != 0 { top } else { 0 };
                    (0o7777 & !cleared, bits | special)
                }
            };
            self.clauses.push(c);
        }
        Ok(())
    }

    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }

    /// The mode (`0o7777` bits) an entry gets.
    pub fn apply(&self, mode: u32, is_dir: bool) -> u32 {
        let was_x = mode & 0o111 != 0;
        let mut mode = mode & 0o7777;
        for c in &self.clauses {
            if (c.dirs_only && !is_dir) || (c.files_only && is_dir) {
                continue;
            }
            mode &= c.and;
            mode |= if c.x_keep && !was_x && !is_dir {
                c.or & !0o111
            } else {
                c.or
            };
        }
        mode
    }
}

/// rsync's `-E` without `-p`: the mode a regular file that was already at the
/// destination keeps (`dst`), with execute bits for everyone who may read when the
/// source (`src`) is executable and it is not yet, and none when the source is not.
pub fn executability(src: u32, dst: u32) -> u32 {
    if src & 0o111 == 0 {
        dst & !0o111
    } else if dst & 0o111 == 0 {
        dst | (dst & 0o444) >> 2
    } else {
        dst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chmod(spec: &str) -> Chmod {
        let mut c = Chmod::default();
        c.add(spec, 0o022).unwrap();
        c
    }

    #[test]
    fn octal_and_prefixes() {
        let c = chmod("D755,F644");
        assert_eq!(c.apply(0o700, true), 0o755);
        assert_eq!(c.apply(0o4777, false), 0o644);
    }

    #[test]
    fn symbolic_forms_follow_rsync() {
        assert_eq!(chmod("u+w").apply(0o444, false), 0o644);
        assert_eq!(chmod("Dg+s").apply(0o755, true), 0o2755);
        assert_eq!(chmod("Dg+s").apply(0o755, false), 0o755);
        assert_eq!(chmod("a-x").apply(0o755, false), 0o644);
        assert_eq!(chmod("ugo=rwX").apply(0o600, false), 0o666);
        assert_eq!(chmod("ugo=rwX").apply(0o700, false), 0o777);
        assert_eq!(chmod("ugo=rwX").apply(0o600, true), 0o777);
        // No who: the umask cuts what is added.
        assert_eq!(chmod("+w").apply(0o444, false), 0o644);
        assert_eq!(chmod("o=").apply(0o777, false), 0o770);
        assert_eq!(chmod("u+s,+t").apply(0o755, false), 0o5755);
        // a+s: both setuid and setgid (rsync 3.4, chmod(1)); a-s clears both.
        assert_eq!(chmod("a+s").apply(0o644, false), 0o6644);
        assert_eq!(chmod("a-s").apply(0o6755, false), 0o755);
    }

    #[test]
    fn executability_follows_the_source_and_keeps_the_rest() {
        assert_eq!(executability(0o600, 0o1700), 0o1600);
        assert_eq!(executability(0o601, 0o604), 0o705);
        // Already executable by someone: left as it is.
        assert_eq!(executability(0o755, 0o710), 0o710);
        assert_eq!(executability(0o644, 0o640), 0o640);
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut c = Chmod::default();
        for bad in ["", "u", "q+w", "u+q", "D", "8", "DF644", "u+w,"] {
            assert!(c.add(bad, 0o022).is_err(), "{bad}");
        }
    }
}
