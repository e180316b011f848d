//! Reading one rule in rsync's filter syntax: `RULE[,MODIFIERS] PATTERN`.
//!
//! Rule names, short or long: `-`/`exclude`, `+`/`include`, `.`/`merge`,
//! `:`/`dir-merge`, `H`/`hide`, `S`/`show`, `P`/`protect`, `R`/`risk`, `!`/`clear`.
//! The pattern follows one space or `_`. Modifiers, as rsync 3.x takes them:
//! `/` (match the absolute path), `!` (match when the pattern does not), `C` (the CVS
//! list), `s`/`r` (sender / receiver side only), `p` (perishable), `x` (xattr names);
//! on merge rules also `-`/`+` (the file holds bare excludes / includes), `e` (exclude
//! the merge file itself), `n` (not inherited by subdirectories), `w` (split words).
//!
//! `--exclude`/`--include` and their `-from` files take rsync's old syntax instead: a
//! bare pattern, with `- ` and `+ ` as optional prefixes and `!` clearing the list.

/// A rule's kind and modifiers. A merge rule's become the template of the rules in
/// its file (sides, `-`/`+`, word splitting, and `/`, `p` carried over).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    /// An include (`+`, `S`, `R`), not an exclude.
    pub include: bool,
    /// `s`, or `H`/`S`: decides what the source sends.
    pub sender: bool,
    /// `r`, or `P`/`R`: decides what the destination keeps from deletion.
    pub receiver: bool,
    /// `/`: matched against the absolute path.
    pub abs_path: bool,
    /// `!`: applies where the pattern does not match.
    pub negate: bool,
    /// `p`: ignored inside a directory being deleted.
    pub perishable: bool,
    /// `x`: matches extended-attribute names, never file names.
    pub xattr: bool,
    /// `C`: rsync's CVS list (on a merge rule: a `.cvsignore` file).
    pub cvs: bool,
    /// `-`/`+` on a merge rule: its file holds bare patterns.
    pub no_prefixes: bool,
    /// `w`: the merge file is split on whitespace, not lines.
    pub word_split: bool,
    /// `n`: subdirectories do not inherit the merge file's rules.
    pub no_inherit: bool,
    /// `e`: the merge file itself is excluded.
    pub exclude_self: bool,
}

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Include, exclude, hide, show, protect, risk; with `C` and no pattern, the CVS list.
    Match,
    /// `.`: read the file's rules here, now.
    Merge,
    /// `:`: read the file in every directory of the transfer.
    DirMerge,
    /// `!`: forget the rules so far.
    Clear,
}

/// One parsed rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub kind: Kind,
    pub mods: Mods,
    pub pattern: &'a [u8],
}

/// How rules are written where they come from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Syntax {
    /// `--exclude`, `--include` and their files: bare patterns, `- `/`+ ` prefixes.
    pub old_prefixes: bool,
    /// `--delete-excluded`: a rule with no side becomes a sender-side rule.
    pub delete_excluded: bool,
}

/// A rule rsync would refuse, in rsync's words.
///
/// A rule read from a file is never shown: whoever chose the file (a merge file in a
/// tree another user can write) would read its lines back in the error. Such an
/// error says where the rule is instead, and drops the details about its text.
#[derive(Debug, PartialEq, Eq)]
pub struct RuleError {
    /// What is wrong, as rsync says it ("Unknown filter rule").
    what: &'static str,
    /// About the text (a modifier and its position), shown only with the text.
    detail: String,
    /// Continues `what` after the detail.
    tail: &'static str,
    text: String,
    /// Where the rule was read, when it came from a file (`FILE line N`).
    from: Option<String>,
}

impl RuleError {
    fn new(what: &'static str, text: &[u8]) -> RuleError {
        RuleError {
            what,
            detail: String::new(),
            tail: "",
            text: show(text),
            from: None,
        }
    }

    /// The same error for a rule read at `place` (its text left out).
    pub fn read_at(self, place: String) -> RuleError {
        RuleError {
            from: Some(place),
            ..self
        }
    }
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.from {
            None => write!(
                f,
                "{}{}{}: {}",
                self.what, self.detail, self.tail, self.text
            ),
            Some(place) => write!(f, "{}{}: <rule from {place}>", self.what, self.tail),
        }
    }
}

impl std::error::Error for RuleError {}

/// How rsync writes a match rule's kind in traces (`- `, `+ `, `H `, `S `, `P `, `R `).
pub fn prefix(p: &Parsed<'_>) -> &'static str {
    match (p.mods.include, p.mods.sender, p.mods.receiver) {
        (false, true, false) => "H ",
        (true, true, false) => "S ",
        (false, false, true) => "P ",
        (true, false, true) => "R ",
        (true, _, _) => "+ ",
        (false, _, _) => "- ",
    }
}

fn show(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// rsync's `rule_strcmp`: `name` followed by the end, whitespace, `_` or `,`.
/// Returns the rest, starting at the separator (`,` skipped).
fn long_name<'a>(s: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let rest = s.strip_prefix(name.as_bytes())?;
    match rest.first() {
        None => Some(rest),
        Some(c) if c.is_ascii_whitespace() || *c == b'_' => Some(rest),
        Some(b',') => Some(&rest[1..]),
        _ => None,
    }
}

/// Parses the next rule of `s` (a `--filter` value, a line of a rules file, or the
/// rest of a word-split file). `template` is the enclosing merge rule's modifiers
/// (default for the command line). Returns the rule and the unparsed rest, or
/// `None` when `s` holds no more rules.
pub fn parse_rule<'a>(
    s: &'a [u8],
    template: &Mods,
    syntax: Syntax,
) -> Result<Option<(Parsed<'a>, &'a [u8])>, RuleError> {
    let whole = s;
    let mut s = s;
    if template.word_split {
        while s.first().is_some_and(|c| c.is_ascii_whitespace()) {
            s = &s[1..];
        }
    }
    if s.is_empty() {
        return Ok(None);
    }
    let mut mods = Mods {
        include: template.include,
        abs_path: template.abs_path,
        negate: template.negate,
        perishable: template.perishable,
        ..Mods::default()
    };
    let mut kind = Kind::Match;
    let mut clear = false;
    if template.no_prefixes {
        // Bare patterns; in a `.cvsignore` a lone `!` clears.
        if s[0] == b'!' && template.cvs {
            clear = true;
        }
    } else if syntax.old_prefixes {
        if let Some(rest) = s.strip_prefix(b"- ") {
            mods.include = false;
            s = rest;
        } else if let Some(rest) = s.strip_prefix(b"+ ") {
            mods.include = true;
            s = rest;
        } else if s[0] == b'!' {
            clear = true;
        }
    } else {
        let longs = [
            ("clear", b'!'),
            ("dir-merge", b':'),
            ("exclude", b'-'),
            ("hide", b'H'),
            ("include", b'+'),
            ("merge", b'.'),
            ("protect", b'P'),
            ("risk", b'R'),
            ("show", b'S'),
        ];
        // After this, `s` starts with the modifiers (or the separator).
        let (ch, rest) = match longs
            .iter()
            .find_map(|(name, ch)| long_name(s, name).map(|r| (*ch, r)))
        {
            Some(found) => found,
            None => {
                let rest = &s[1..];
                (s[0], rest.strip_prefix(b",").unwrap_or(rest))
            }
        };
        s = rest;
        let mut side_named = false;
        match ch {
            b':' => kind = Kind::DirMerge,
            b'.' => kind = Kind::Merge,
            b'+' => mods.include = true,
            b'-' => {}
            b'S' | b'H' => {
                mods.include = ch == b'S';
                mods.sender = true;
                side_named = true;
            }
            b'R' | b'P' => {
                mods.include = ch == b'R';
                mods.receiver = true;
                side_named = true;
            }
            b'!' => {
                kind = Kind::Clear;
                clear = true;
            }
            _ => {
                return Err(RuleError::new("Unknown filter rule", whole));
            }
        }
        let merge = matches!(kind, Kind::Merge | Kind::DirMerge);
        if !clear {
            while let Some(&c) = s.first() {
                if c == b' ' || c == b'_' {
                    break;
                }
                if template.word_split && c.is_ascii_whitespace() {
                    break;
                }
                let invalid = || RuleError {
                    detail: format!(" '{}' at position {}", c as char, whole.len() - s.len()),
                    tail: " in filter rule",
                    ..RuleError::new("invalid modifier", whole)
                };
                match c {
                    b'-' | b'+' if merge && !mods.no_prefixes => {
                        mods.no_prefixes = true;
                        mods.include = c == b'+';
                    }
                    b'/' => mods.abs_path = true,
                    b'!' if !merge => mods.negate = true,
                    b'C' if !mods.no_prefixes && !side_named => {
                        mods.no_prefixes = true;
                        mods.word_split = true;
                        mods.no_inherit = true;
                        mods.cvs = true;
                    }
                    b'e' if merge => mods.exclude_self = true,
                    b'n' if merge => mods.no_inherit = true,
                    b'p' => mods.perishable = true,
                    b'r' if !side_named => mods.receiver = true,
                    b's' if !side_named => mods.sender = true,
                    b'w' if merge => mods.word_split = true,
                    b'x' => mods.xattr = true,
                    _ => return Err(invalid()),
                }
                s = &s[1..];
            }
            // The one separator before the pattern.
            if let Some(&c) = s.first()
                && (c == b' ' || c == b'_')
            {
                s = &s[1..];
            }
        }
    }
    if template.sender || template.receiver {
        if mods.sender || mods.receiver {
            return Err(RuleError::new(
                "specified-side merge file contains specified-side filter",
                whole,
            ));
        }
        mods.sender = template.sender;
        mods.receiver = template.receiver;
    }
    let len = if template.word_split {
        s.iter()
            .position(|c| c.is_ascii_whitespace())
            .unwrap_or(s.len())
    } else {
        s.len()
    };
    let (pattern, rest) = s.split_at(len);
    if clear {
        if kind == Kind::Clear && !pattern.is_empty() {
            return Err(RuleError::new("'!' rule has trailing characters", whole));
        }
        // In the old syntax and bare lists only a lone `!` clears; `!x` is a pattern.
        if pattern.len() <= 1 {
            kind = Kind::Clear;
        }
    } else if pattern.is_empty() && !mods.cvs {
        return Err(RuleError::new("unexpected end of filter rule", whole));
    }
    if syntax.delete_excluded && kind == Kind::Match && !mods.sender && !mods.receiver {
        mods.sender = true;
    }
    Ok(Some((
        Parsed {
            kind,
            mods,
            pattern,
        },
        rest,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Parsed<'_> {
        let (p, rest) = parse_rule(s.as_bytes(), &Mods::default(), Syntax::default())
            .unwrap()
            .unwrap();
        assert!(rest.is_empty(), "{s}: rest {rest:?}");
        p
    }

    fn err(s: &str) -> String {
        parse_rule(s.as_bytes(), &Mods::default(), Syntax::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn short_and_long_names() {
        for (s, include, sender, receiver) in [
            ("- a", false, false, false),
            ("exclude a", false, false, false),
            ("+ a", true, false, false),
            ("include a", true, false, false),
            ("H a", false, true, false),
            ("hide a", false, true, false),
            ("S a", true, true, false),
            ("show a", true, true, false),
            ("P a", false, false, true),
            ("protect a", false, false, true),
            ("R a", true, false, true),
            ("risk a", true, false, true),
            ("-_a", false, false, false),
        ] {
            let p = one(s);
            assert_eq!(p.kind, Kind::Match, "{s}");
            assert_eq!(p.pattern, b"a", "{s}");
            assert_eq!(
                (p.mods.include, p.mods.sender, p.mods.receiver),
                (include, sender, receiver),
                "{s}"
            );
        }
        assert_eq!(one("merge f").kind, Kind::Merge);
        assert_eq!(one(". f").kind, Kind::Merge);
        assert_eq!(one("dir-merge f").kind, Kind::DirMerge);
        assert_eq!(one(": f").kind, Kind::DirMerge);
        assert_eq!(one("!").kind, Kind::Clear);
        assert_eq!(one("clear").kind, Kind::Clear);
    }

    #[test]
    fn modifiers() {
        let p = one("-/!sp a b");
        assert!(p.mods.abs_path && p.mods.negate && p.mods.sender && p.mods.perishable);
        assert_eq!(p.pattern, b"a b");
        let p = one("exclude,sr x");
        assert!(p.mods.sender && p.mods.receiver);
        let p = one(":n- .f");
        assert!(p.mods.no_inherit && p.mods.no_prefixes && !p.mods.include);
        let p = one("dir-merge,+ew .f");
        assert!(p.mods.no_prefixes && p.mods.include && p.mods.exclude_self);
        assert!(p.mods.word_split);
        let p = one(":C");
        assert!(p.mods.cvs && p.mods.word_split && p.mods.no_inherit);
        assert!(p.pattern.is_empty());
        let p = one("-C");
        assert_eq!(p.kind, Kind::Match);
        assert!(p.mods.cvs);
        let p = one("-x user.*");
        assert!(p.mods.xattr);
    }

    #[test]
    fn rsyncs_errors() {
        assert_eq!(err("? a"), "Unknown filter rule: ? a");
        assert_eq!(
            err("-e a"),
            "invalid modifier 'e' at position 1 in filter rule: -e a"
        );
        assert_eq!(
            err(".! f"),
            "invalid modifier '!' at position 1 in filter rule: .! f"
        );
        assert!(err("Hr a").starts_with("invalid modifier 'r'"));
        assert_eq!(err("- "), "unexpected end of filter rule: - ");
        assert_eq!(err("! x"), "'!' rule has trailing characters: ! x");
    }

    #[test]
    fn a_rule_read_from_a_file_is_located_not_shown() {
        let e = parse_rule(b"-e secret", &Mods::default(), Syntax::default()).unwrap_err();
        assert_eq!(
            e.read_at("rules line 3".into()).to_string(),
            "invalid modifier in filter rule: <rule from rules line 3>"
        );
    }

    #[test]
    fn old_prefixes_of_exclude_and_include() {
        let old = Syntax {
            old_prefixes: true,
            ..Syntax::default()
        };
        let inc = Mods {
            include: true,
            ..Mods::default()
        };
        let parse =
            |s: &'static str, t: &Mods| parse_rule(s.as_bytes(), t, old).unwrap().unwrap().0;
        assert!(!parse("- a", &inc).mods.include);
        assert!(parse("+ a", &Mods::default()).mods.include);
        assert!(parse("P a", &inc).mods.include);
        assert_eq!(parse("P a", &inc).pattern, b"P a");
        assert_eq!(parse("!", &inc).kind, Kind::Clear);
        assert_eq!(parse("!x", &inc).kind, Kind::Match);
    }

    #[test]
    fn merge_templates_give_sides_and_words() {
        let t = Mods {
            sender: true,
            no_prefixes: true,
            word_split: true,
            ..Mods::default()
        };
        let (p, rest) = parse_rule(b"  a.o b.o", &t, Syntax::default())
            .unwrap()
            .unwrap();
        assert_eq!(p.pattern, b"a.o");
        assert!(p.mods.sender && !p.mods.include);
        assert_eq!(rest, b" b.o");
        let t = Mods {
            receiver: true,
            ..Mods::default()
        };
        assert!(
            parse_rule(b"- a", &t, Syntax::default())
                .unwrap()
                .unwrap()
                .0
                .mods
                .receiver
        );
        assert!(parse_rule(b"H a", &t, Syntax::default()).is_err());
    }

    #[test]
    fn delete_excluded_makes_plain_rules_sender_side() {
        let de = Syntax {
            delete_excluded: true,
            ..Syntax::default()
        };
        let p = |s: &'static str| {
            parse_rule(s.as_bytes(), &Mods::default(), de)
                .unwrap()
                .unwrap()
                .0
        };
        assert!(p("- a").mods.sender && !p("- a").mods.receiver);
        assert!(p("P a").mods.receiver && !p("P a").mods.sender);
        assert!(p("-r a").mods.receiver && !p("-r a").mods.sender);
        assert!(!p(": f").mods.sender);
    }
}
