//! A server that lies in its listings, as a compromised filer, a buggy one, or anyone
//! on the path of plain NFS can: a relay between nfsync and a real ganesha rewrites the
//! names (and, over NFSv3, the cookies and handles) in its READDIR replies. Nothing may
//! be written or removed outside DEST, the honest entries are copied, and every refused
//! name is one line (exit 23); a listing that goes round ends in bounded time.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::Cursor;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nfs3_client::nfs3_types::nfs3::{self as v3, Nfs3Option, Nfs3Result};
use nfs3_client::nfs3_types::rpc::rpc_msg;
use nfs3_client::nfs3_types::xdr_codec::{Pack, Unpack};

use super::faults::wait_at_most;
use crate::support::ganesha::{self, Export, Proto};
use crate::support::net::{Rewrite, Servers, swap_xdr_strings};
use crate::support::{Scratch, Tree, bin, describe};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory of the shared `proto` server's export, by its path there.
fn corner(export: &Export) -> String {
    let rel = format!("hostile-names-{}", NEXT.fetch_add(1, Ordering::SeqCst));
    std::fs::create_dir_all(export.path.join(&rel)).unwrap();
    rel
}

/// Every path below `root`, except those below `skip`.
fn paths_below(root: &Path, skip: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.starts_with(skip) {
                continue;
            }
            if p.symlink_metadata().unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.insert(p);
        }
    }
    out
}

/// `nfsync ARGS SRC DST` to its end, at most two minutes.
fn run(args: &[&OsStr]) -> Output {
    let child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_at_most(child, Duration::from_secs(120), "nfsync hangs")
}

/// The lines of `out`'s stderr that refuse a listed name.
fn refusals(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("refused the name"))
        .map(str::to_owned)
        .collect()
}

fn assert_no_raw_controls(out: &Output) {
    for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !bytes.iter().any(|&b| (b < 0x20 && b != b'\n') || b == 0x7f),
            "a raw control character in {what}:\n{}",
            describe(out)
        );
    }
}

/// A relay in front of `export` swapping the XDR strings of `swaps` in every reply;
/// how to reach the export through it.
fn renaming(servers: &mut Servers, export: &Export, swaps: Vec<(Vec<u8>, Vec<u8>)>) -> Export {
    let rewrite: Arc<Rewrite> = Arc::new(move |_, rep| {
        for (from, to) in &swaps {
            swap_xdr_strings(rep, from, to);
        }
    });
    Export {
        nfs_port: servers.rewriting_relay(export.nfs_port, rewrite),
        ..export.clone()
    }
}

fn swap(from: &str, to: impl AsRef<[u8]>) -> (Vec<u8>, Vec<u8>) {
    (from.as_bytes().to_vec(), to.as_ref().to_vec())
}

/// The escape-heavy name, valid as one component: copied, and printed escaped.
const ESCAPES: &[u8] = b"\x1b[2Jab\x07z";

/// The issue's tree, with every hostile name of the issue in one run: climbing names,
/// an absolute one, `..`, a NUL, 300 bytes, a name listed twice, and a valid name full
/// of terminal escapes. DEST is two levels below a scratch directory whose other
/// contents must not change; `--delete` must not remove DEST's copy of the name
/// listed twice.
fn lying_names_never_leave_dest(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let rel = corner(&export);
    let src = export.path.join(&rel).join("src");
    Tree::new(&src)
        .file("d/QQQQQQQQ", "server bytes")
        .file("d/YYYYYYYY/inside.txt", "inside")
        .file("e/SSSSSSSSS", "s")
        .file("e/WW/f.txt", "f")
        .file("ok/honest.txt", "honest")
        .file("n/NULNAM", "nul")
        .file("l/LONGNAME", "long")
        .file("p/dupA", "a")
        .file("p/dupB", "b")
        .file("x/ESCAPE__", "escape")
        .file("z/ABSOLUTE", "absolute");
    let outer = Scratch::new();
    let abs = outer.join("abs-target");
    let dst = outer.join("a/b/dst");
    Tree::new(&dst).file("p/dupB", "kept");
    let before = paths_below(outer.path(), &dst);
    let mut servers = Servers::default();
    let swaps = vec![
        swap("QQQQQQQQ", "../../QQ"),
        swap("YYYYYYYY", "../../YY"),
        swap("SSSSSSSSS", "x/../../S"),
        swap("WW", ".."),
        swap("NULNAM", "NU\0NAM"),
        swap("LONGNAME", [b'L'; 300]),
        swap("dupA", "dupB"),
        swap("ESCAPE__", ESCAPES),
        swap("ABSOLUTE", abs.as_os_str().as_bytes()),
    ];
    let relayed = renaming(&mut servers, &export, swaps);
    let url = relayed.url(&format!("{rel}/src/"), "");
    let mut dst_arg = dst.clone().into_os_string();
    dst_arg.push("/");
    let out = run(&[
        "-a".as_ref(),
        "-i".as_ref(),
        "--delete".as_ref(),
        url.as_ref(),
        &dst_arg,
    ]);
    drop(servers);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), None, "{}", describe(&out));
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_eq!(
        paths_below(outer.path(), &dst),
        before,
        "something was written outside DEST:\n{}",
        describe(&out)
    );
    assert!(!abs.exists());
    // The honest entries are there, the valid name full of escapes too.
    assert_eq!(std::fs::read(dst.join("ok/honest.txt")).unwrap(), b"honest");
    let escaped = dst.join("x").join(OsStr::from_bytes(ESCAPES));
    assert_eq!(std::fs::read(escaped).unwrap(), b"escape");
    // Nothing of the refused ones, and the name listed twice kept as it was.
    for empty in ["d", "e", "n", "l", "z"] {
        let left: Vec<_> = std::fs::read_dir(dst.join(empty)).unwrap().collect();
        assert!(left.is_empty(), "{empty}/ holds {left:?}");
    }
    assert_eq!(std::fs::read(dst.join("p/dupB")).unwrap(), b"kept");
    // One line for each refused name, naming it escaped.
    let lines = refusals(&out);
    let long = "L".repeat(300);
    let named = [
        "\"../../QQ\"",
        "\"../../YY\"",
        "\"x/../../S\"",
        "\"..\"",
        "\"NU\\#000NAM\"",
        &format!("\"{long}\""),
        "\"dupB\"",
        &format!("\"{}\"", abs.display()),
    ];
    assert_eq!(lines.len(), named.len(), "{}", describe(&out));
    for n in named {
        assert_eq!(
            lines.iter().filter(|l| l.contains(n)).count(),
            1,
            "{n}: {}",
            describe(&out)
        );
    }
    assert_no_raw_controls(&out);
}

/// A destination whose listing names `../../..`: with `--delete` nothing outside DEST
/// goes, nothing in that directory is deleted on the listing's word, and the rest is
/// copied.
fn delete_of_a_climbing_dest_name_removes_nothing(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let rel = corner(&export);
    let top = export.path.join(&rel);
    Tree::new(&top)
        .file("keep-above.txt", "above")
        .file("a/b/dst/ZZZZZZZZ/inside.txt", "inside")
        .file("a/b/dst/old.txt", "old");
    let before = paths_below(&top, &top.join("a/b/dst"));
    let local = Scratch::new();
    Tree::new(local.join("src")).file("new.txt", "new");
    let mut servers = Servers::default();
    let relayed = renaming(&mut servers, &export, vec![swap("ZZZZZZZZ", "../../..")]);
    let url = relayed.url(&format!("{rel}/a/b/dst/"), "");
    let mut src_arg = local.join("src").into_os_string();
    src_arg.push("/");
    let out = run(&["-r".as_ref(), "--delete".as_ref(), &src_arg, url.as_ref()]);
    drop(servers);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_eq!(paths_below(&top, &top.join("a/b/dst")), before);
    assert!(top.join("a/b/dst/ZZZZZZZZ/inside.txt").exists());
    assert!(
        top.join("a/b/dst/old.txt").exists(),
        "deleted on a lying listing"
    );
    assert_eq!(std::fs::read(top.join("a/b/dst/new.txt")).unwrap(), b"new");
    let lines = refusals(&out);
    assert!(
        lines.len() == 1 && lines[0].contains("\"../../..\""),
        "{}",
        describe(&out)
    );
}

/// An NFSv3 relay that edits the READDIRPLUS replies with `edit(call's arguments,
/// reply)`; every other reply passes unchanged.
fn readdirplus_relay(
    servers: &mut Servers,
    export: &Export,
    edit: impl Fn(&v3::READDIRPLUS3args, &mut v3::READDIRPLUS3resok<'static>) + Send + Sync + 'static,
) -> Export {
    let rewrite: Arc<Rewrite> = Arc::new(move |call, rep| {
        // xid, CALL, rpcvers, prog, vers, proc: NFS's READDIRPLUS is 17.
        let word = |i: usize| call.get(i * 4..i * 4 + 4).map(|w| w.try_into().unwrap());
        if word(3).map(u32::from_be_bytes) != Some(100_003)
            || word(5).map(u32::from_be_bytes) != Some(17)
        {
            return;
        }
        let mut c = Cursor::new(call);
        let Ok((_, n)) = rpc_msg::unpack(&mut c) else {
            return;
        };
        let Ok((args, _)) = v3::READDIRPLUS3args::unpack(&mut Cursor::new(&call[n..])) else {
            return;
        };
        let Ok((head, n)) = rpc_msg::unpack(&mut Cursor::new(&rep[..])) else {
            return;
        };
        type Res = Nfs3Result<v3::READDIRPLUS3resok<'static>, v3::READDIRPLUS3resfail>;
        let Ok((Nfs3Result::Ok(mut page), _)) = Res::unpack(&mut Cursor::new(&rep[n..])) else {
            return;
        };
        edit(&args, &mut page);
        let mut out = Vec::new();
        head.pack(&mut out).unwrap();
        Res::Ok(page).pack(&mut out).unwrap();
        *rep = out;
    });
    Export {
        nfs_port: servers.rewriting_relay(export.nfs_port, rewrite),
        ..export.clone()
    }
}

/// A source directory whose READDIRPLUS cookies go A → B → A (never at its end): the
/// run ends with exit 23 and a line, soon.
#[test]
fn cookies_going_round_end_the_listing() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let rel = corner(&export);
    let src = export.path.join(&rel).join("src");
    Tree::new(&src)
        .file("ok.txt", "ok")
        .file("round/a", "a")
        .file("round/b", "b")
        .file("round/c", "c");
    let mut servers = Servers::default();
    // Only `round` (whose listing holds `a`) goes round: a page asked at 0 ends at its
    // first entry's cookie, every later page back at 0.
    let relayed = readdirplus_relay(&mut servers, &export, |args, page| {
        let entries = &mut page.reply.entries.0;
        if !entries.iter().any(|e| e.name.0.as_ref() == b"a") {
            return;
        }
        let first = entries.first().map_or(1, |e| e.cookie);
        if let Some(last) = entries.last_mut() {
            last.cookie = if args.cookie == 0 { first } else { 0 };
        }
        page.reply.eof = false;
    });
    let dst = Scratch::new();
    let url = relayed.url(&format!("{rel}/src/"), "");
    let started = std::time::Instant::now();
    let out = run(&["-r".as_ref(), url.as_ref(), dst.join("d").as_os_str()]);
    drop(servers);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert!(started.elapsed() < Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("go round"), "{}", describe(&out));
    assert_eq!(std::fs::read(dst.join("d/ok.txt")).unwrap(), b"ok");
}

/// A source directory listed with the handle of its parent: walked into once, it would
/// be walked forever. The run ends with exit 23 and a line; the rest is copied.
#[test]
fn a_child_with_an_ancestors_handle_is_refused() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let rel = corner(&export);
    let src = export.path.join(&rel).join("src");
    Tree::new(&src)
        .file("ok.txt", "ok")
        .file("sub/loop/x", "x")
        .file("sub/y", "y");
    let mut servers = Servers::default();
    let relayed = readdirplus_relay(&mut servers, &export, |args, page| {
        for e in &mut page.reply.entries.0 {
            if e.name.0.as_ref() == b"loop" {
                e.name_handle = Nfs3Option::Some(args.dir.clone());
            }
        }
    });
    let dst = Scratch::new();
    let url = relayed.url(&format!("{rel}/src/"), "");
    let out = run(&["-r".as_ref(), url.as_ref(), dst.join("d").as_os_str()]);
    drop(servers);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("looping server"), "{}", describe(&out));
    assert_eq!(std::fs::read(dst.join("d/ok.txt")).unwrap(), b"ok");
    assert_eq!(std::fs::read(dst.join("d/sub/y")).unwrap(), b"y");
    assert!(!dst.join("d/sub/loop/sub").exists(), "walked into the loop");
}

#[test]
fn lying_names_never_leave_dest_v3() {
    lying_names_never_leave_dest(Proto::V3);
}

#[test]
fn lying_names_never_leave_dest_v41() {
    lying_names_never_leave_dest(Proto::V41);
}

#[test]
fn delete_of_a_climbing_dest_name_removes_nothing_v3() {
    delete_of_a_climbing_dest_name_removes_nothing(Proto::V3);
}

#[test]
fn delete_of_a_climbing_dest_name_removes_nothing_v41() {
    delete_of_a_climbing_dest_name_removes_nothing(Proto::V41);
}

/// `-L` (and `--copy-unsafe-links`) from an `nfs://` source over server symlinks that
/// lead to a local file by absolute path or climb above the transfer: each is an error
/// line (exit 23), never resolved against the local filesystem, whose file's bytes
/// appear nowhere in DEST; a link inside the transfer is followed on the server.
fn following_links_never_reads_the_local_filesystem(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let local = Scratch::new();
    let secret = local.join("secret");
    std::fs::write(&secret, "local secret").unwrap();
    let rel = corner(&export);
    let src = export.path.join(&rel).join("src");
    Tree::new(&src)
        .file("inside.txt", "inside")
        .symlink("abs", &secret)
        .symlink("passwd", "/etc/passwd")
        .symlink("climb", "../../../../../../../../etc/passwd")
        .symlink("fine", "inside.txt");
    let url = export.url(&format!("{rel}/src/"), "");
    for opt in ["-rL", "-rl --copy-unsafe-links"] {
        let dst = local.join(format!("dst{}", opt.len()));
        let mut args: Vec<&OsStr> = opt.split(' ').map(OsStr::new).collect();
        args.extend([OsStr::new(&url), dst.as_os_str()]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(23), "{opt}: {}", describe(&out));
        let fine = std::fs::read(dst.join("fine"));
        assert_eq!(
            fine.ok().as_deref(),
            Some(&b"inside"[..]),
            "{opt}: {}",
            describe(&out)
        );
        for link in ["abs", "passwd", "climb"] {
            let p = dst.join(link);
            assert!(
                std::fs::symlink_metadata(&p).is_err(),
                "{opt}: {link} copied: {}",
                describe(&out)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.lines()
                    .any(|l| l.contains(&format!("/{link}")) && l.contains("outside")),
                "{opt}: no line for {link}: {}",
                describe(&out)
            );
        }
        let passwd = std::fs::read("/etc/passwd").unwrap();
        for e in paths_below(&dst, Path::new("/nonexistent")) {
            if let Ok(bytes) = std::fs::read(&e) {
                assert_ne!(bytes, b"local secret", "{opt}: {}", e.display());
                assert_ne!(bytes, passwd, "{opt}: {}", e.display());
            }
        }
    }
}

#[test]
fn following_links_never_reads_the_local_filesystem_v3() {
    following_links_never_reads_the_local_filesystem(Proto::V3);
}

#[test]
fn following_links_never_reads_the_local_filesystem_v41() {
    following_links_never_reads_the_local_filesystem(Proto::V41);
}
