//! rsync's `--out-format` / `--log-file-format` strings: parsed once on the command line,
//! then expanded for every itemized entry the way rsync's `log_formatted()` expands them,
//! so scripts that parse rsync's per-file lines read nfsync's the same way.
//!
//! The escapes about the entry (`%n %f %l %L %M %B %U %G %i %o %b`) and about the run
//! (`%t %p`) are meaningful on a local copy and give what rsync gives. The daemon-only
//! ones (`%a %h %P %u`) expand to nothing in rsync when it is not a daemon, which leaves
//! the escape itself in the line; `%m` becomes empty: nfsync does the same. `%C` is a
//! file's whole-content checksum, rsync's default xxh128, read from the source for the
//! lines that show it (only when a format asks). `%c` counts rsync's delta-transfer
//! checksums, which nfsync does not have, so a format naming it is refused rather than
//! printed with a made-up value.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::Itemize;
use crate::meta::{Kind, Meta, Time};
use crate::report::units::HumanLevel;

/// One piece of a parsed format.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    /// Text copied as it is (including escapes rsync leaves unexpanded).
    Text(Vec<u8>),
    /// `%[']*[-][0-9]*[']*X`.
    Escape {
        letter: u8,
        /// How human the numbers of `%l` and `%b` are: one level per apostrophe.
        humanize: HumanLevel,
        left: bool,
        zero: bool,
        width: usize,
    },
}

/// A parsed `--out-format` or `--log-file-format`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFormat {
    pieces: Vec<Piece>,
    /// Whether it has `%i` (then every itemized change is shown, as with `-i`).
    pub has_i: bool,
    /// Whether it has `%o` or `%i` (then a deletion is shown in this format, otherwise
    /// as `deleting NAME`).
    pub has_o_or_i: bool,
    /// Whether it has `%C` (then the files shown need their checksum).
    pub has_checksum: bool,
}

/// The widest field a format may ask for: rsync's whole line fits in 5 KiB (its
/// `MAXPATHLEN+1024` buffer), so a wider field could only be a mistake, or a way to
/// make nfsync allocate gigabytes per line.
pub const MAX_WIDTH: usize = 4096;

/// Why a format was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FormatError {
    /// An escape nfsync cannot give.
    #[error("%{letter} is not supported ({why})")]
    Unsupported {
        /// The escape's letter.
        letter: char,
        /// Why nfsync cannot give it.
        why: &'static str,
    },
    /// A field wider than [`MAX_WIDTH`].
    #[error("%{width}{letter}: a field is at most {MAX_WIDTH} wide")]
    Width {
        /// The escape's letter.
        letter: char,
        /// The width as written.
        width: String,
    },
}

/// What one line is about: an entry that changed, or one that was deleted.
pub struct Item<'a> {
    /// rsync's itemized code (`>f.st......`, or the deletion's).
    pub code: Itemize,
    /// The name relative to the transfer root, as rsync's `%n` (without the `/`).
    pub rel: &'a Path,
    /// The entry's kind.
    pub kind: Kind,
    /// The source's attributes (absent for a deletion: rsync shows zeros then).
    pub meta: Option<&'a Meta>,
    /// The source path as nfsync read it (`%f`); absent for a deletion.
    pub src: Option<&'a Path>,
    /// A symlink's target (` -> T`).
    pub link: Option<&'a Path>,
    /// The name this one is a hard link to (` => NAME`).
    pub hard_link: Option<&'a Path>,
    /// Bytes of content written (`%b`).
    pub bytes: u64,
    /// The file's whole-content checksum (`%C`), where it is known.
    pub checksum: Option<u128>,
}

impl Item<'_> {
    /// Whether this line is about a deletion (`%o` is `del.`, `%i` `*deleting  `).
    fn deleted(&self) -> bool {
        self.code == Itemize::Deleting
    }
}

/// What a format needs to know besides the entry.
pub struct Context {
    /// Whether owners are kept (`%U` is the uid then, else 0).
    pub owners: bool,
    /// Whether groups are kept (`%G` is the gid then, else `DEFAULT`).
    pub groups: bool,
    /// This process's id (`%p`).
    pub pid: u32,
}

impl LogFormat {
    /// rsync's `-i` format.
    pub fn itemize() -> LogFormat {
        LogFormat::parse("%i %n%L").expect("a valid format")
    }

    /// rsync's `-v` format.
    pub fn names() -> LogFormat {
        LogFormat::parse("%n%L").expect("a valid format")
    }

    /// rsync's line for a deletion when the format has neither `%o` nor `%i`.
    pub fn deleting() -> LogFormat {
        LogFormat::parse("deleting %n").expect("a valid format")
    }

    /// Parses a format as rsync's `log_formatted()` scans it.
    pub fn parse(format: &str) -> Result<LogFormat, FormatError> {
        let b = format.as_bytes();
        let mut pieces = Vec::new();
        let mut text = Vec::new();
        let (mut has_i, mut has_o, mut has_checksum) = (false, false, false);
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'%' {
                text.push(b[i]);
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            let mut humanize = 0;
            while b.get(i) == Some(&b'\'') {
                humanize += 1;
                i += 1;
            }
            let left = b.get(i) == Some(&b'-');
            if left {
                i += 1;
            }
            let digits_start = i;
            // rsync's scratch buffer takes at most 23 digits.
            while i < b.len() && b[i].is_ascii_digit() && i - digits_start < 23 {
                i += 1;
            }
            let digits = &format[digits_start..i];
            while b.get(i) == Some(&b'\'') {
                humanize += 1;
                i += 1;
            }
            let Some(&letter) = b.get(i) else {
                // A `%` at the end stays as written.
                text.extend_from_slice(&b[start..]);
                break;
            };
            i += 1;
            match letter {
                b'c' => {
                    return Err(FormatError::Unsupported {
                        letter: 'c',
                        why: "it counts rsync's delta-transfer checksums; nfsync has no delta transfer",
                    });
                }
                b'i' | b'C' | b'n' | b'l' | b'b' | b'f' | b'L' | b'M' | b't' | b'o' | b'p'
                | b'B' | b'U' | b'G' | b'm' | b'%' => {
                    let width = match digits {
                        "" => 0,
                        d => d.parse().ok().filter(|&w| w <= MAX_WIDTH).ok_or_else(|| {
                            FormatError::Width {
                                letter: letter as char,
                                width: d.to_string(),
                            }
                        })?,
                    };
                    has_i |= letter == b'i';
                    has_checksum |= letter == b'C';
                    has_o |= letter == b'o';
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Escape {
                        letter,
                        humanize: HumanLevel::from_count(humanize),
                        left,
                        zero: digits.starts_with('0'),
                        width,
                    });
                }
                // rsync expands nothing for these outside a daemon (and for unknown
                // letters): the escape stays in the line as written.
                _ => text.extend_from_slice(&b[start..i]),
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(LogFormat {
            pieces,
            has_i,
            has_o_or_i: has_i || has_o,
            has_checksum,
        })
    }

    /// The line for `item` (raw bytes, no newline; names as they are).
    pub fn render(&self, item: &Item<'_>, cx: &Context) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.extend_from_slice(t),
                &Piece::Escape {
                    letter,
                    humanize,
                    left,
                    zero,
                    width,
                } => {
                    let pad = |s: &[u8], out: &mut Vec<u8>, zero_ok: bool| {
                        pad_into(out, s, width, left, zero && zero_ok)
                    };
                    match letter {
                        b'%' => pad(b"%", &mut out, false),
                        b'n' => {
                            let mut n = name_bytes(item.rel);
                            if item.kind == Kind::Dir && !n.ends_with(b"/") {
                                n.push(b'/');
                            }
                            pad(&n, &mut out, false)
                        }
                        b'f' => pad(&long_name(item), &mut out, false),
                        b'l' => {
                            let len = item.meta.map_or(0, |m| m.size);
                            pad(humanize.num(len).as_bytes(), &mut out, false)
                        }
                        b'b' => pad(humanize.num(item.bytes).as_bytes(), &mut out, false),
                        b'U' => {
                            let uid = item.meta.filter(|_| cx.owners).map_or(0, |m| m.uid);
                            pad(uid.to_string().as_bytes(), &mut out, true)
                        }
                        b'G' => match item.meta {
                            Some(m) if cx.groups => {
                                pad(m.gid.to_string().as_bytes(), &mut out, true)
                            }
                            None if cx.groups => pad(b"0", &mut out, true),
                            _ => pad(b"DEFAULT", &mut out, false),
                        },
                        b'p' => pad(cx.pid.to_string().as_bytes(), &mut out, true),
                        b'M' => {
                            let t = item.meta.map_or(Time::default(), |m| m.mtime);
                            pad(
                                timestring(t.sec).replace(' ', "-").as_bytes(),
                                &mut out,
                                false,
                            )
                        }
                        b't' => pad(timestring(now()).as_bytes(), &mut out, false),
                        b'B' => {
                            let mode = item.meta.map_or(0, |m| m.mode);
                            let kind = if item.deleted() {
                                Kind::File
                            } else {
                                item.kind
                            };
                            let mode = if kind == Kind::Symlink { 0o777 } else { mode };
                            pad(permstring(mode).as_bytes(), &mut out, false)
                        }
                        b'o' => pad(
                            if item.deleted() { b"del." } else { b"send" },
                            &mut out,
                            false,
                        ),
                        b'm' => pad(b"", &mut out, false),
                        b'C' => match item.checksum.filter(|_| item.kind == Kind::File) {
                            Some(sum) => pad(format!("{sum:032x}").as_bytes(), &mut out, false),
                            // rsync's blank is not padded to the width.
                            None => out.extend_from_slice(&[b' '; 32]),
                        },
                        b'i' => pad(item.code.to_string().as_bytes(), &mut out, false),
                        b'L' => {
                            let (arrow, target) = match (item.hard_link, item.link) {
                                (Some(h), _) => (" => ", name_bytes(h)),
                                (None, Some(t)) if !item.deleted() => (" -> ", name_bytes(t)),
                                _ if width == 0 => continue,
                                _ => ("    ", Vec::new()),
                            };
                            out.extend_from_slice(arrow.as_bytes());
                            pad(&target, &mut out, false)
                        }
                        _ => unreachable!("parse keeps only known letters"),
                    }
                }
            }
        }
        out
    }
}

fn pad_into(out: &mut Vec<u8>, s: &[u8], width: usize, left: bool, zero: bool) {
    let fill = width.saturating_sub(s.len());
    if left {
        out.extend_from_slice(s);
        out.resize(out.len() + fill, b' ');
    } else {
        out.resize(out.len() + fill, if zero { b'0' } else { b' ' });
        out.extend_from_slice(s);
    }
}

fn name_bytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

/// rsync's `%f` on the sending side: the source path as given, joined with the name,
/// cleaned (`//`, `/./`, a trailing `/` gone) and without a leading `/`.
fn long_name(item: &Item<'_>) -> Vec<u8> {
    let raw = item.src.unwrap_or(item.rel).as_os_str().as_bytes();
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in raw.split(|&b| b == b'/') {
        if c.is_empty() || c == b"." {
            continue;
        }
        parts.push(c);
    }
    // rsync's clean_fname keeps a final `/.` (the transfer's top directory `SRC/.`).
    if raw.ends_with(b"/.") || parts.is_empty() {
        parts.push(b".");
    }
    parts.join(&b'/')
}

/// `ls -l`'s permission column without the type letter, as rsync's `permstring`.
pub fn permstring(mode: u32) -> String {
    let mut s = String::with_capacity(9);
    for (shift, special, set_char) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        let x = bits & 1 != 0;
        s.push(match (mode & special != 0, x) {
            (true, true) => set_char,
            (true, false) => set_char.to_ascii_uppercase(),
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// The current time in seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// rsync's `timestring()`: local time as `YYYY/MM/DD HH:MM:SS`.
pub fn timestring(sec: i64) -> String {
    let t = sec as libc::time_t;
    // SAFETY: `tm` is plain data; localtime_r writes only into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return format!("{sec}");
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "{:04}/{:02}/{:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    );
    s
}

/// For messages about a format given as an `OsStr`.
pub fn parse_os(format: &OsStr) -> Result<LogFormat, FormatError> {
    LogFormat::parse(&format.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Update;

    fn meta(kind: Kind, size: u64, mode: u32) -> Meta {
        Meta {
            kind,
            size,
            mode,
            uid: 1000,
            gid: 100,
            mtime: Time { sec: 0, nsec: 0 },
            nlink: 1,
            dev: 0,
            ino: 0,
            rdev: 0,
            change: 0,
            atime: None,
        }
    }

    fn line(fmt: &str, item: &Item<'_>) -> String {
        let cx = Context {
            owners: true,
            groups: false,
            pid: 42,
        };
        String::from_utf8(LogFormat::parse(fmt).unwrap().render(item, &cx)).unwrap()
    }

    #[test]
    fn a_field_wider_than_rsyncs_line_is_refused() {
        assert!(LogFormat::parse("%4096l %-4096n").is_ok());
        for f in ["%4097l", "%99999999999l %n", "%-99999999999999999999999n"] {
            let e = LogFormat::parse(f).unwrap_err();
            assert!(matches!(e, FormatError::Width { .. }), "{f}: {e}");
        }
        assert_eq!(
            LogFormat::parse("%99999999999l").unwrap_err().to_string(),
            "%99999999999l: a field is at most 4096 wide"
        );
    }

    #[test]
    fn escapes_expand_as_rsync_expands_them() {
        let m = meta(Kind::File, 12345, 0o4755);
        let item = Item {
            code: Itemize::New(Update::Received, Kind::File),
            rel: Path::new("d/a"),
            kind: Kind::File,
            meta: Some(&m),
            src: Some(Path::new("/src//./d/a")),
            link: None,
            hard_link: None,
            bytes: 12345,
            checksum: Some(0xc6930651a6933db5_5501f34aab58c54f),
        };
        assert_eq!(line("%C|%n", &item), "c6930651a6933db55501f34aab58c54f|d/a");
        assert_eq!(line("%i %n%L", &item), ">f+++++++++ d/a");
        assert_eq!(
            line("%o|%f|%l|%'l|%b|%B|%U|%G|%p", &item),
            "send|src/d/a|12345|12,345|12345|rwsr-xr-x|1000|DEFAULT|42"
        );
        assert_eq!(
            line("[%-6n][%8l][%05p][%%]", &item),
            "[d/a   ][   12345][00042][%]"
        );
        assert_eq!(line("%a %h %u %P %m|%z", &item), "%a %h %u %P |%z");
        assert_eq!(line("%''l %'''l", &item), "12.35K 12.06K");
        let del = Item {
            meta: None,
            src: None,
            kind: Kind::Dir,
            code: Itemize::Deleting,
            bytes: 0,
            checksum: None,
            ..item
        };
        assert_eq!(line("%40C|", &del), format!("{}|", " ".repeat(32)));
        assert_eq!(
            line("%i %n|%o|%B|%l", &del),
            "*deleting   d/a/|del.|---------|0"
        );
    }

    #[test]
    fn delta_transfer_escapes_are_refused() {
        let unsupported = |f| match LogFormat::parse(f).unwrap_err() {
            FormatError::Unsupported { letter, .. } => letter,
            e => panic!("{e}"),
        };
        assert_eq!(unsupported("%n %c"), 'c');
        assert!(LogFormat::parse("%C %n").unwrap().has_checksum);
        assert!(LogFormat::parse("%i").unwrap().has_i);
        assert!(LogFormat::parse("%o %n").unwrap().has_o_or_i);
        assert!(!LogFormat::parse("%n%L").unwrap().has_o_or_i);
    }
}
