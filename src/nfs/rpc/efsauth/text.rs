//! Text an endpoint wrote (IMDS, the container agent, STS), made safe to print.
//!
//! nfsync runs as root and prints credential errors on root's terminal: an error body
//! is the endpoint's to choose, and an escape sequence in it would be the terminal's
//! to obey (retitling it, rewriting what is shown, on some terminals answering back).
//! So control characters and bytes that are not UTF-8 are shown as rsync shows them
//! in names, `\#ooo` in octal, and the text is cut short: an error body may be a
//! megabyte of HTML, and one line of it says what went wrong.

use std::fmt::Write;

/// How much of an endpoint's text an error quotes, in bytes of the original.
pub const SHOWN: usize = 200;

/// `raw` with control characters (but tab), DEL and non-UTF-8 bytes as `\#ooo`, and
/// a backslash that would read as such an escape escaped too; at most `max` bytes of
/// `raw` are shown, with `…` after when there was more.
pub fn escape(raw: &[u8], max: usize) -> String {
    let cut = &raw[..raw.len().min(max)];
    let mut out = String::with_capacity(cut.len());
    let octal = |out: &mut String, b: u32| {
        let _ = write!(out, "\\#{b:03o}");
    };
    for chunk in cut.utf8_chunks() {
        let text = chunk.valid();
        for (i, c) in text.char_indices() {
            let rest = &text.as_bytes()[i + 1..];
            let escaped_backslash = c == '\\'
                && rest.len() >= 4
                && rest[0] == b'#'
                && rest[1..4].iter().all(u8::is_ascii_digit);
            if (c < ' ' && c != '\t') || c == '\x7f' || escaped_backslash {
                octal(&mut out, c as u32);
            } else if c > '\x7f' && c.is_control() {
                // C1 controls (U+0080–U+009F) act like ESC sequences on some terminals.
                for b in c.encode_utf8(&mut [0; 4]).bytes() {
                    octal(&mut out, u32::from(b));
                }
            } else {
                out.push(c);
            }
        }
        // A character cut in two by `max` is shown as its bytes, like any other.
        for &b in chunk.invalid() {
            octal(&mut out, u32::from(b));
        }
    }
    if raw.len() > max {
        out.push('…');
    }
    out
}

/// [`escape`] of `raw` with surrounding white space dropped, at most [`SHOWN`] bytes.
pub fn shown(raw: &[u8]) -> String {
    escape(raw.trim_ascii(), SHOWN)
}

/// An error's text, escaped like [`shown`]: a TLS error may quote the server's
/// certificate, and an I/O error the peer's words.
pub fn error(e: &impl std::fmt::Display) -> String {
    escape(e.to_string().as_bytes(), SHOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bad_bytes_are_octal_and_long_text_is_cut() {
        assert_eq!(shown(b" \x1b[31mred\x1b[0m\n"), "\\#033[31mred\\#033[0m");
        assert_eq!(
            escape(b"a\tb\x7f\xffc\\#123", 99),
            "a\tb\\#177\\#377c\\#134#123"
        );
        assert_eq!(escape("\u{9b}2J é".as_bytes(), 99), "\\#302\\#2332J é");
        assert_eq!(escape(&[b'x'; 500], SHOWN).len(), SHOWN + '…'.len_utf8());
        // é is two bytes: cut after the first, the half is shown as a byte.
        assert_eq!(escape("aé".as_bytes(), 2), "a\\#303…");
        assert_eq!(escape(b"ok", 2), "ok");
    }
}
