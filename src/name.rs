//! What one entry's name may be, wherever it comes from.
//!
//! Every name nfsync joins to a local path or sends in a call must be one path
//! component: a name that climbs (`..`), is absolute, holds a `/` or a NUL, or is
//! longer than the disk takes would reach somewhere the transfer never named. Names
//! from the kernel's readdir always are; names from a server, a file list or a
//! future source are checked against this one rule.

use std::fmt::{self, Write as _};

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

/// A name as rsync prints it in a UTF-8 locale: a byte that is not part of valid
/// UTF-8 and a control character other than tab become `\#ooo` (octal), and so does
/// the backslash of a literal `\#` followed by three digits, so that the escape stays
/// unambiguous. Here, below every module that prints, so that a refusal, a per-file
/// line and a log line show a name one way (the output escapes whole lines again,
/// which leaves this as it is).
pub fn escape(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        let text = chunk.valid();
        for (i, c) in text.char_indices() {
            let escaped_backslash = c == '\\' && {
                let rest = &text.as_bytes()[i + 1..];
                rest.len() >= 4 && rest[0] == b'#' && rest[1..4].iter().all(u8::is_ascii_digit)
            };
            if (c < ' ' && c != '\t') || escaped_backslash {
                let _ = write!(out, "\\#{:03o}", c as u32);
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\#{b:03o}");
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
}
