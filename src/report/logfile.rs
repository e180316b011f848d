//! `--log-file=FILE`: rsync's log, line for line. Each line is `YYYY/MM/DD HH:MM:SS
//! [PID] ` and then what rsync would log: `building file list` at the start, one line
//! per change in `--log-file-format` (default `%i %n%L`), deletions, the messages
//! printed on the way, and the totals at the end.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use super::format::{LogFormat, now, timestring};
use super::{escape_name, escape_text};

/// An open log file and the format of its per-file lines.
pub struct LogFile {
    file: Mutex<File>,
    /// The per-file lines' format.
    pub format: LogFormat,
    pid: u32,
}

impl LogFile {
    /// Opens `path` for appending (created 0644 less the umask, as rsync does); a
    /// symlink at `path` is not followed (rsync refuses one owned by another user; nfsync
    /// refuses them all, which is never less safe).
    pub fn open(
        path: &Path,
        format: LogFormat,
        trust: crate::options::trust::Trust,
    ) -> io::Result<LogFile> {
        let file = crate::options::trust::open_append(trust, path)?;
        Ok(LogFile {
            file: Mutex::new(file),
            format,
            pid: std::process::id(),
        })
    }

    /// Appends a per-file line (raw name bytes) with rsync's time and pid prefix,
    /// escaped as the terminal output is ([`escape_name`]): a file name must not put
    /// terminal escapes into a log that root reads.
    pub fn line(&self, text: &[u8]) {
        self.append(escape_name(text).as_bytes());
    }

    /// Appends a message line, whose names are already escaped ([`escape_text`]).
    pub fn text(&self, text: &str) {
        self.append(escape_text(text).as_bytes());
    }

    /// A failed write is not worth failing the copy for (rsync goes on too).
    fn append(&self, escaped: &[u8]) {
        let mut buf = format!("{} [{}] ", timestring(now()), self.pid).into_bytes();
        buf.extend_from_slice(escaped);
        buf.push(b'\n');
        let _ = self.file.lock().unwrap().write_all(&buf);
    }
}
