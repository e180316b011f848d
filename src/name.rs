//! What one entry's name may be, wherever it comes from.
//!
//! Every name nfsync joins to a local path or sends in a call must be one path
//! component: a name that climbs (`..`), is absolute, holds a `/` or a NUL, or is
//! longer than the disk takes would reach somewhere the transfer never named. Names
//! from the kernel's readdir always are; names from a server, a file list or a
//! future source are checked against this one rule.

use std::fmt;

/// The longest name a local filesystem takes (Linux's `NAME_MAX`): a longer one could
/// only fail later, on the disk, further from where it came in.
pub const NAME_MAX: usize = 255;

/// Why a name is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Empty,
    Dot,
    Slash,
    Nul,
    Long(usize),
    Twice,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Empty => f.write_str("empty"),
            Why::Dot => f.write_str("names the directory itself or its parent"),
            Why::Slash => f.write_str("contains /: not a single path component"),
            Why::Nul => f.write_str("contains a NUL byte"),
            Why::Long(n) => write!(f, "{n} bytes, longer than NAME_MAX ({NAME_MAX})"),
            Why::Twice => f.write_str("listed more than once in the same directory"),
        }
    }
}

/// Whether `name` may be an entry of a directory: one path component a local
/// filesystem could hold.
pub fn check(name: &[u8]) -> Result<(), Why> {
    match name {
        b"" => Err(Why::Empty),
        b"." | b".." => Err(Why::Dot),
        _ if name.len() > NAME_MAX => Err(Why::Long(name.len())),
        _ => match name.iter().find(|&&b| b == b'/' || b == 0) {
            Some(b'/') => Err(Why::Slash),
            Some(_) => Err(Why::Nul),
            None => Ok(()),
        },
    }
}

/// A refused name as an error line shows it: printable text as it is, every other
/// byte (a control character, a byte that is not UTF-8) and the backslash as `\xNN`.
/// Not rsync's `\#ooo`: the output escapes whole lines that way, and would escape the
/// backslash of an `\#ooo` a second time.
pub fn shown(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\x5c"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_components_pass() {
        assert_eq!(check(b"a"), Ok(()));
        assert_eq!(check(b"\x1b[31mred"), Ok(()));
        assert_eq!(check(b"...").ok(), Some(()));
        assert_eq!(check(&[b'x'; 255]), Ok(()));
        assert_eq!(check(b""), Err(Why::Empty));
        assert_eq!(check(b"."), Err(Why::Dot));
        assert_eq!(check(b".."), Err(Why::Dot));
        assert_eq!(check(b"../../x"), Err(Why::Slash));
        assert_eq!(check(b"/etc/passwd"), Err(Why::Slash));
        assert_eq!(check(b"x/"), Err(Why::Slash));
        assert_eq!(check(b"a\0b"), Err(Why::Nul));
        assert_eq!(check(&[b'x'; 256]), Err(Why::Long(256)));
    }

    #[test]
    fn a_shown_name_has_no_control_characters() {
        assert_eq!(
            shown(b"a\0b\x1b[2J\\x\xffz\xc3\xa9"),
            "a\\x00b\\x1b[2J\\x5cx\\xffz\u{e9}"
        );
        assert_eq!(shown("caf\u{e9}".as_bytes()), "caf\u{e9}");
    }
}
