//! How names and messages are made safe to print. A name can come from a hostile NFS
//! server or a local tree someone else fills: a control character in it (ESC starting
//! a terminal sequence, a newline faking a line, a carriage return overwriting one) must
//! never reach the terminal or a log raw. rsync writes such bytes as `\#ooo` (octal);
//! nfsync writes them the same way in every line it prints.
//!
//! Per-file lines are rendered from the raw name bytes and escaped whole
//! ([`escape_name`], [`escape_controls`] under `-8`). Messages (errors, warnings,
//! notes) are text: the names in them are written [`Escaped`], the rest (an error's
//! words, which may quote a server's) has its control characters escaped where the line
//! is printed ([`escape_text`]), which leaves escaped names as they are.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt;

/// A file name as rsync prints it in a UTF-8 locale, so tools that parse its `-i` lines
/// read nfsync's the same way: a byte that is not part of valid UTF-8 and a control
/// character other than tab become `\#ooo` (octal), and so does the backslash of a
/// literal `\#` followed by three digits, so that the escape stays unambiguous.
pub fn escape_name(name: &[u8]) -> String {
    crate::name::escape(name)
}

/// A file name as rsync's `-8` prints it: bytes with the high bit set as they are
/// (whatever the locale makes of them), control characters other than tab and a
/// backslash that would read as an escape still as `\#ooo`.
pub fn escape_controls(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for (i, &b) in name.iter().enumerate() {
        let rest = &name[i + 1..];
        let escaped_backslash = b == b'\\'
            && rest.len() >= 4
            && rest[0] == b'#'
            && rest[1..4].iter().all(u8::is_ascii_digit);
        if (b < b' ' && b != b'\t') || escaped_backslash {
            out.extend_from_slice(format!("\\#{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

/// A name in a message, as the per-file lines show it ([`escape_name`]): written with
/// `{}` where a path's `display()` would turn invalid UTF-8 into U+FFFD and keep
/// control characters raw. Under `-8` too: a message is text, so bytes that are not
/// UTF-8 stay escaped there.
pub struct Escaped<T>(pub T);

impl<T: AsRef<OsStr>> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape_name(self.0.as_ref().as_bytes()))
    }
}

/// A message line as printed: its control characters but tab as `\#ooo`, as
/// [`escape_name`] writes them. Text already escaped is left as it is (its backslashes
/// are not escaped again), so a name written [`Escaped`] reads the same in a message as
/// in a per-file line.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match is_control(c) {
            true => {
                let _ = write!(out, "\\#{:03o}", c as u32);
            }
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// What rsync escapes in a UTF-8 locale: C0 controls but tab (DEL and C1 controls it
/// prints as they are, and so does nfsync, to print what rsync prints).
fn is_control(c: char) -> bool {
    c < ' ' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bit_output_keeps_high_bytes() {
        assert_eq!(escape_controls(b"hi\xf9name"), b"hi\xf9name");
        assert_eq!(escape_controls(b"nl\nname"), b"nl\\#012name");
        assert_eq!(escape_controls(b"tab\tx"), b"tab\tx");
        assert_eq!(escape_controls(b"esc\\#123"), b"esc\\#134#123");
    }

    #[test]
    fn names_are_escaped_as_rsync_escapes_them() {
        // What rsync 3.2 printed for these names under LANG=C.UTF-8.
        assert_eq!(escape_name(b"nl\nname"), "nl\\#012name");
        assert_eq!(escape_name(b"bad\xffname"), "bad\\#377name");
        assert_eq!(escape_name(b"tab\tx"), "tab\tx");
        assert_eq!(escape_name(b"del\x7fx"), "del\x7fx");
        assert_eq!(escape_name("ümlaut".as_bytes()), "ümlaut");
        assert_eq!(escape_name(b"back\\#slash"), "back\\#slash");
        assert_eq!(escape_name(b"back\\x"), "back\\x");
        assert_eq!(escape_name(b"esc\\#123"), "esc\\#134#123");
    }

    #[test]
    fn messages_escape_their_control_characters_once() {
        assert_eq!(escape_text("plain: ok"), "plain: ok");
        assert!(matches!(escape_text("plain"), Cow::Borrowed(_)));
        assert_eq!(escape_text("x\x1b]0;pwned\x07y"), "x\\#033]0;pwned\\#007y");
        assert_eq!(escape_text("a\r\nb\tc"), "a\\#015\\#012b\tc");
        // A name escaped into the message stays as it was escaped.
        let name = OsStr::from_bytes(b"a\x1b[31mred\xff\\#123");
        let line = format!("nfsync: {}: Permission denied", Escaped(name));
        assert_eq!(
            line,
            "nfsync: a\\#033[31mred\\#377\\#134#123: Permission denied"
        );
        assert_eq!(escape_text(&line), line);
    }
}
