//! `--version` and `-VV` in rsync's shapes.
//!
//! Scripts and rsync's own test suite ask `rsync --version` (text, whose first line
//! holds `protocol version`) and `rsync -VV` (JSON) what a binary can do before they
//! use an option, so nfsync answers in the same shapes with its own truth: what it
//! preserves on the mount path, and `false` for what it has not (no wire protocol,
//! so no compression, checksum or daemon lists). The protocol named is the rsync
//! whose command line nfsync follows; nfsync itself speaks no rsync protocol.

/// The rsync protocol whose options and results nfsync follows.
const PROTOCOL: u32 = 32;

/// Each capability rsync lists, in its order, with nfsync's answer. A number is a
/// bit width; `true`/`false` whether nfsync does it.
const CAPABILITIES: &[(&str, Cap)] = &[
    ("file_bits", Cap::Bits(64)),
    ("inum_bits", Cap::Bits(64)),
    ("timestamp_bits", Cap::Bits(64)),
    ("long_int_bits", Cap::Bits(64)),
    // rsync's own sender/receiver pipe; nfsync has none.
    ("socketpairs", Cap::Yes(false)),
    ("symlinks", Cap::Yes(true)),
    // A symlink's own mtime is set (-t), unless -J.
    ("symtimes", Cap::Yes(true)),
    ("hardlinks", Cap::Yes(true)),
    // -H links regular files only; linked symlinks, fifos and devices are copied apart.
    ("hardlink_specials", Cap::Yes(false)),
    ("hardlink_symlinks", Cap::Yes(false)),
    // nfs:// URLs take IPv6 addresses.
    ("IPv6", Cap::Yes(true)),
    // -U, on the mount path.
    ("atimes", Cap::Yes(true)),
    ("batchfiles", Cap::Yes(false)),
    ("inplace", Cap::Yes(true)),
    ("append", Cap::Yes(true)),
    // POSIX ACLs as their system.posix_acl_* attributes, on the mount path.
    ("ACLs", Cap::Yes(true)),
    ("ACL_at", Cap::Yes(false)),
    ("xattrs", Cap::Yes(true)),
    ("secluded_args", Cap::Text("none")),
    ("iconv", Cap::Yes(false)),
    ("prealloc", Cap::Yes(false)),
    ("stop_at", Cap::Yes(true)),
    ("crtimes", Cap::Yes(false)),
];

#[derive(Clone, Copy)]
enum Cap {
    Bits(u32),
    Yes(bool),
    Text(&'static str),
}

/// What `--version` (`-V`) prints: rsync's layout, nfsync's facts.
pub fn text() -> String {
    let mut caps = Vec::new();
    for (name, cap) in CAPABILITIES {
        let word = name.replace('_', "-");
        caps.push(match (name.strip_suffix("_bits"), cap) {
            (Some(what), Cap::Bits(n)) => {
                let what = match what {
                    "file" => "files",
                    "inum" => "inums",
                    "timestamp" => "timestamps",
                    _ => "long ints",
                };
                format!("{n}-bit {what}")
            }
            (_, Cap::Yes(true)) => word,
            (_, Cap::Yes(false)) => format!("no {word}"),
            (_, Cap::Text(t)) => format!("{t} {word}").replace("none ", "no "),
            (None, Cap::Bits(_)) => unreachable!("only *_bits are widths"),
        });
    }
    let mut out = format!(
        "nfsync  version {}  protocol version {PROTOCOL}\n\
         (nfsync speaks no rsync protocol: {PROTOCOL} is the rsync whose options it follows)\n\
         Capabilities:\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&wrap(&caps.join(", ")));
    out.push_str(
        "Optimizations:\n    none\nChecksum list:\n    none (-c compares the bytes themselves)\n\
         Compress list:\n    none (nothing is compressed)\n\
         Daemon auth list:\n    none (no daemon)\n",
    );
    out
}

/// Lines of at most 76 columns, indented by four, broken after a comma.
fn wrap(list: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("   ");
    for item in list.split(", ") {
        if line.len() + item.len() + 2 > 76 && line.len() > 3 {
            out.push_str(&line);
            out.push_str(",\n");
            line = String::from("   ");
        } else if line.len() > 3 {
            line.push(',');
        }
        line.push(' ');
        line.push_str(item);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// What `-VV` prints: rsync's JSON object (its keys in its order), nfsync's facts.
pub fn json() -> String {
    let caps: Vec<String> = CAPABILITIES
        .iter()
        .map(|(name, cap)| {
            let value = match cap {
                Cap::Bits(n) => n.to_string(),
                Cap::Yes(b) => b.to_string(),
                Cap::Text(t) => format!("{t:?}"),
            };
            format!("\"{name}\": {value}")
        })
        .collect();
    let caps = wrap(&caps.join(", "));
    format!(
        "{{\n  \"program\": \"nfsync\",\n  \"version\": \"{}\",\n  \"protocol\": \"{PROTOCOL}.0\",\n  \
         \"capabilities\": {{\n{}  }},\n  \"optimizations\": {{}},\n  \"checksum_list\": [],\n  \
         \"compress_list\": [],\n  \"daemon_auth_list\": [],\n  \
         \"caveat\": \"nfsync speaks no rsync protocol; the protocol is the rsync whose options it follows\"\n}}\n",
        env!("CARGO_PKG_VERSION"),
        caps,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_answers_what_rsyncs_suite_greps_for() {
        let j = json();
        // rsync's suite and scripts look for these exact substrings.
        for yes in ["\"ACLs\": true", "\"xattrs\": true", "\"symtimes\": true"] {
            assert!(j.contains(yes), "{yes} missing in {j}");
        }
        for no in ["\"crtimes\": false", "\"hardlink_symlinks\": false"] {
            assert!(j.contains(no), "{no} missing in {j}");
        }
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["compress_list"], serde_json::json!([]));
        assert_eq!(v["capabilities"]["file_bits"], 64);
        assert_eq!(v["capabilities"]["secluded_args"], "none");
        assert_eq!(
            v["capabilities"].as_object().unwrap().len(),
            CAPABILITIES.len()
        );
    }

    #[test]
    fn text_has_rsyncs_first_line_and_lists_every_capability() {
        let t = text();
        let first = t.lines().next().unwrap();
        assert!(first.starts_with("nfsync  version "), "{first}");
        assert!(first.ends_with("  protocol version 32"), "{first}");
        for word in [
            "64-bit files",
            "no socketpairs",
            "ACLs",
            "atimes",
            "no crtimes",
        ] {
            assert!(t.contains(word), "{word} missing in {t}");
        }
        assert!(t.lines().all(|l| l.len() <= 96), "{t}");
    }
}
