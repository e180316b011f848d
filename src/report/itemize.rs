//! rsync's itemized change code, the `%i` of `-i` and of `--out-format`: eleven
//! columns `YXcstpoguax` saying how an entry was updated, what it is, and which of its
//! attributes changed, so scripts that read rsync's `-i` lines read nfsync's.
//!
//! The engine says what happened in these terms and the report spells it; no other
//! place writes the letters. rsync's documented forms (its man page, `--itemize-changes`):
//! `>f+++++++++` a new file, `>f.st......` a file sent again, `.d..t......` a directory
//! whose time is set, `cL+++++++++` a new symlink, `hf+++++++++` a hard link, and
//! `*deleting  ` a removal.

use std::fmt;

use crate::meta::Kind;

/// How the entry was updated: rsync's first column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// `>`: its content was written (rsync's receiver "receives" every file it
    /// writes, even on a local copy).
    Received,
    /// `c`: made or changed on the destination without content from the source (a
    /// directory, a symlink, a device, a copy of a basis directory's file).
    Local,
    /// `h`: made as a hard link to another name.
    HardLink,
    /// `.`: not updated; only attributes may have changed.
    Attributes,
}

/// rsync's `t` column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeChange {
    /// `.`: the modification times agree.
    #[default]
    Same,
    /// `t`: the modification time differs and is set to the source's.
    Set,
    /// `T`: the time becomes the time of the update (without `-t`).
    ToNow,
}

impl From<bool> for TimeChange {
    /// [`TimeChange::Set`] when the times differ.
    fn from(differs: bool) -> TimeChange {
        if differs {
            TimeChange::Set
        } else {
            TimeChange::Same
        }
    }
}

/// Which attributes of an entry that was there differ: the nine columns after the
/// type. rsync's `u` column (access and creation times) is always `.`: nfsync keeps
/// neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// `c`: a symlink's target, a device's numbers (or a file's checksum).
    pub value: bool,
    /// `s`: a regular file's size.
    pub size: bool,
    /// `t` or `T`.
    pub time: TimeChange,
    /// `p`: the permissions.
    pub perms: bool,
    /// `o`: the owner.
    pub owner: bool,
    /// `g`: the group.
    pub group: bool,
    /// `a`: the ACL.
    pub acl: bool,
    /// `x`: another extended attribute.
    pub xattr: bool,
}

impl Changes {
    /// Whether any column has a letter.
    pub fn any(self) -> bool {
        self != Changes::default()
    }
}

/// One entry's itemized code; its [`Display`](fmt::Display) is rsync's string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Itemize {
    /// An entry the destination did not have: `+++++++++` in the attribute columns.
    New(Update, Kind),
    /// An entry the destination had (or a basis directory's copy of it), with the
    /// attributes that differ.
    Changed(Update, Kind, Changes),
    /// A removal: `*deleting  ` (the `*` of a message, then the message).
    Deleting,
}

impl Itemize {
    /// Whether the entry is new (rsync counts these as created).
    pub fn is_new(self) -> bool {
        matches!(self, Itemize::New(..))
    }

    /// How the entry was updated (none for a removal).
    pub fn update(self) -> Option<Update> {
        match self {
            Itemize::New(u, _) | Itemize::Changed(u, _, _) => Some(u),
            Itemize::Deleting => None,
        }
    }
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Update::Received => ">",
            Update::Local => "c",
            Update::HardLink => "h",
            Update::Attributes => ".",
        })
    }
}

/// rsync's type column: `f` a regular file, `d` a directory, `L` a symlink, `D` a
/// device, `S` a special file (fifo, socket).
fn type_letter(kind: Kind) -> char {
    match kind {
        Kind::File => 'f',
        Kind::Dir => 'd',
        Kind::Symlink => 'L',
        Kind::CharDev | Kind::BlockDev => 'D',
        Kind::Fifo | Kind::Socket => 'S',
    }
}

impl fmt::Display for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = |on: bool, c: char| if on { c } else { '.' };
        let time = match self.time {
            TimeChange::Same => '.',
            TimeChange::Set => 't',
            TimeChange::ToNow => 'T',
        };
        let cols = [
            col(self.value, 'c'),
            col(self.size, 's'),
            time,
            col(self.perms, 'p'),
            col(self.owner, 'o'),
            col(self.group, 'g'),
            '.',
            col(self.acl, 'a'),
            col(self.xattr, 'x'),
        ];
        cols.iter().try_for_each(|c| fmt::Write::write_char(f, *c))
    }
}

impl fmt::Display for Itemize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match *self {
            Itemize::New(u, kind) => format!("{u}{}+++++++++", type_letter(kind)),
            // rsync blanks the columns of an entry that was not sent and has no
            // change to show (`.f          `, `hf          NAME => TO`).
            Itemize::Changed(u, kind, c) if u != Update::Received && !c.any() => {
                format!("{u}{}         ", type_letter(kind))
            }
            Itemize::Changed(u, kind, c) => format!("{u}{}{c}", type_letter(kind)),
            Itemize::Deleting => "*deleting  ".to_string(),
        };
        // The width and alignment of `%-12i` and the like apply to the whole code.
        f.pad(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forms rsync's man page documents, and what rsync 3.5.0 prints for the
    /// changes nfsync itemizes.
    #[test]
    fn codes_are_spelled_as_rsync_spells_them() {
        use Itemize::{Changed, New};
        use Update::{Attributes, HardLink, Local, Received};
        let c = Changes::default();
        let cases = [
            (New(Received, Kind::File), ">f+++++++++"),
            (New(Local, Kind::Dir), "cd+++++++++"),
            (New(Local, Kind::Symlink), "cL+++++++++"),
            (New(Local, Kind::CharDev), "cD+++++++++"),
            (New(Local, Kind::BlockDev), "cD+++++++++"),
            (New(Local, Kind::Fifo), "cS+++++++++"),
            (New(Local, Kind::Socket), "cS+++++++++"),
            (New(HardLink, Kind::File), "hf+++++++++"),
            (Itemize::Deleting, "*deleting  "),
            (Changed(Attributes, Kind::Dir, c), ".d         "),
            (Changed(HardLink, Kind::File, c), "hf         "),
            (Changed(Local, Kind::Symlink, c), "cL         "),
            (Changed(Received, Kind::File, c), ">f........."),
            (
                Changed(
                    Received,
                    Kind::File,
                    Changes {
                        size: true,
                        time: TimeChange::Set,
                        ..c
                    },
                ),
                ">f.st......",
            ),
            (
                Changed(
                    Received,
                    Kind::File,
                    Changes {
                        time: TimeChange::ToNow,
                        ..c
                    },
                ),
                ">f..T......",
            ),
            (
                Changed(
                    Attributes,
                    Kind::Dir,
                    Changes {
                        time: true.into(),
                        ..c
                    },
                ),
                ".d..t......",
            ),
            (
                Changed(
                    Local,
                    Kind::Symlink,
                    Changes {
                        value: true,
                        time: TimeChange::Set,
                        ..c
                    },
                ),
                "cLc.t......",
            ),
            (
                Changed(Attributes, Kind::CharDev, Changes { perms: true, ..c }),
                ".D...p.....",
            ),
            (
                Changed(Attributes, Kind::Fifo, Changes { perms: true, ..c }),
                ".S...p.....",
            ),
            (
                Changed(
                    Local,
                    Kind::File,
                    Changes {
                        perms: true,
                        owner: true,
                        group: true,
                        ..c
                    },
                ),
                "cf...pog...",
            ),
            (
                Changed(
                    Attributes,
                    Kind::File,
                    Changes {
                        acl: true,
                        xattr: true,
                        ..c
                    },
                ),
                ".f.......ax",
            ),
        ];
        for (code, want) in cases {
            assert_eq!(code.to_string(), want, "{code:?}");
            assert_eq!(code.to_string().len(), 11);
        }
    }

    #[test]
    fn a_width_pads_the_whole_code() {
        let code = Itemize::New(Update::Received, Kind::File);
        assert_eq!(format!("[{code:<13}]"), "[>f+++++++++  ]");
        assert_eq!(format!("[{code:>12}]"), "[ >f+++++++++]");
    }

    #[test]
    fn the_counts_read_the_update_and_the_new_form() {
        let new = Itemize::New(Update::Received, Kind::File);
        assert!(new.is_new());
        assert_eq!(new.update(), Some(Update::Received));
        let attrs = Itemize::Changed(Update::Attributes, Kind::Dir, Changes::default());
        assert!(!attrs.is_new());
        assert!(!Changes::default().any());
        assert_eq!(Itemize::Deleting.update(), None);
    }
}
