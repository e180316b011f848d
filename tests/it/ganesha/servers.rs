//! Self-checks of the NFSv4.1 test harness, which need no NFSv4 client in nfsync: that
//! the servers `benches/ganesha.sh --nfs4`, `--nfs4-only` and `--slots=N` start are set
//! up as the NFSv4.1 tests ([`super::v41`]) rely on. They are checked with RPC NULL
//! calls and with the tests' own minimal NFSv4.1 client
//! ([`nfs4probe`](crate::support::nfs4probe)), each test with a server of its own.
//! Ganesha needs root: other users skip these tests (one line says so).

use std::os::unix::fs::chown;
use std::process::{Command, Stdio};

use crate::support::ganesha::{self, Ganesha, MOUNT, NFS, Nfs4, Options, rpc_answers};
use crate::support::nfs4probe::{NFS4ERR_BADSESSION, NFS4ERR_MINOR_VERS_MISMATCH, Probe, Session};
use crate::support::{Scratch, Tree, describe, rsync_diff, sync_ok};

/// A server of one's own; `None` when ganesha cannot run here.
fn own_server(nfs4: Nfs4, slots: Option<u32>) -> Option<(Scratch, Ganesha)> {
    ganesha::own(Options {
        nfs4,
        slots,
        ..Options::default()
    })
}

/// `--nfs4-only`: NFSv4.1 and 4.2 on the NFS port and nothing else (no NFSv3, no MOUNT,
/// no 4.0, whose lack of sessions nfsync refuses too); the export is found from the
/// pseudo root at its real path, after RECLAIM_COMPLETE at once (graceless); owners come
/// as numbers; times before 1970 and after 2106 are kept to the nanosecond (what the
/// NFSv4.1 time tests compare against).
#[test]
fn nfs4_only_server_speaks_41_alone() {
    let Some((_dir, g)) = own_server(Nfs4::Only, None) else {
        return;
    };
    assert!(rpc_answers(g.nfs_port, NFS, 4), "{}", g.log_tail());
    assert!(!rpc_answers(g.nfs_port, NFS, 3), "NFSv3 answers");
    assert_eq!(g.mnt_port, 0);
    let conf = std::fs::read_to_string(g.state.join("ganesha.conf")).unwrap();
    assert!(!conf.contains("MNT_Port"), "{conf}");

    let mut p = Probe::connect(g.nfs_port).unwrap();
    for (minor, want) in [(0, NFS4ERR_MINOR_VERS_MISMATCH), (1, 0), (2, 0)] {
        assert_eq!(
            p.minor_version_status(minor).unwrap(),
            want,
            "an empty COMPOUND of minor version {minor}"
        );
    }

    let cases = [
        ("y1960", -315_619_200, 0),
        ("y1960ns", -315_619_200, 123_456_789),
        ("y2200", 7_258_118_400, 0),
        ("y2200ns", 7_258_118_400, 987_654_321),
    ];
    let t = Tree::new(&g.export);
    for (name, sec, nsec) in cases {
        t.file(name, name).mtime(name, sec, nsec);
    }
    chown(g.export.join("y1960"), Some(1234), Some(5678)).unwrap();

    let mut s = Session::open(g.nfs_port, 16).unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    let root = s.attrs(&g.export).unwrap();
    assert_eq!(
        (root.owner.as_str(), root.owner_group.as_str()),
        ("0", "0"),
        "owners as numbers (Only_Numeric_Owners)"
    );
    for (name, sec, nsec) in cases {
        let a = s.attrs(&g.export.join(name)).unwrap();
        assert_eq!(a.mtime, (sec, nsec), "time_modify of {name}");
    }
    let a = s.attrs(&g.export.join("y1960")).unwrap();
    assert_eq!((a.owner.as_str(), a.owner_group.as_str()), ("1234", "5678"));
    assert!(s.attrs(&g.export.join("missing")).is_err());
}

/// `--nfs4`: NFSv3, MOUNT and NFSv4.1 at once, NFS on one port, and one path for both:
/// what nfsync writes over NFSv3 to EXPORT/dst, an NFSv4.1 client finds at EXPORT/dst.
#[test]
fn nfs4_and_v3_answer_on_one_port_and_one_path() {
    let Some((dir, g)) = own_server(Nfs4::Also, None) else {
        return;
    };
    assert!(rpc_answers(g.nfs_port, NFS, 3), "{}", g.log_tail());
    assert!(rpc_answers(g.mnt_port, MOUNT, 3));
    assert!(rpc_answers(g.nfs_port, NFS, 4));
    assert_ne!(g.mnt_port, g.nfs_port);

    let src = dir.join("src");
    Tree::new(&src)
        .file("d/a", "over v3\n")
        .mtime("d/a", 1_500_000_000, 42);
    sync_ok(&[], &src, g.url("dst", ""));
    assert!(rsync_diff(&src, &g.export.join("dst")).is_empty());
    let mut s = Session::open(g.nfs_port, 16).unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    let a = s.attrs(&g.export.join("dst/d/a")).unwrap();
    assert_eq!(a.mtime, (1_500_000_000, 42));
    assert_eq!(a.owner, "0");
    // The v4.1 URL names the same place.
    assert_eq!(
        g.url41("dst", "slots=8"),
        format!(
            "nfs://127.0.0.1:{}{}/dst?version=4.1&slots=8",
            g.nfs_port,
            g.export.display()
        )
    );
}

/// `--slots=N` is the most slots a session gets (`Slot_Table_Size`): asked for 64 it
/// grants N, asked for fewer it grants those; without it ganesha grants 64. And the
/// option needs NFSv4.
#[test]
fn slots_option_caps_the_session_slots() {
    let Some((_dir, g)) = own_server(Nfs4::Only, Some(8)) else {
        return;
    };
    assert_eq!(Session::open(g.nfs_port, 64).unwrap().slots, 8);
    assert_eq!(Session::open(g.nfs_port, 4).unwrap().slots, 4);
    drop(g);
    let (_dir, g) = own_server(Nfs4::Only, None).unwrap();
    assert_eq!(Session::open(g.nfs_port, 64).unwrap().slots, 64);
    drop(g);

    let s = Scratch::new();
    std::fs::create_dir(s.join("export")).unwrap();
    let out = Command::new("bash")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ganesha.sh"))
        .arg("start")
        .arg(s.join("export"))
        .arg(s.join("state"))
        .arg("--slots=8")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--slots needs --nfs4"),
        "{}",
        describe(&out)
    );
}

/// An NFSv4-only server killed and restarted (what the NFSv4.1 crash test does) answers
/// again on its port, has forgotten the sessions it had (a client must make a new one)
/// and takes new ones.
#[test]
fn nfs4_server_killed_and_restarted_answers_again() {
    let Some((_dir, mut g)) = own_server(Nfs4::Only, Some(8)) else {
        return;
    };
    let mut s = Session::open(g.nfs_port, 64).unwrap();
    assert_eq!(s.sequence_status().unwrap(), 0);
    let pid = g.pid;
    g.kill();
    g.restart()
        .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    assert_ne!(g.pid, pid);
    assert!(g.answers());
    s.reconnect(g.nfs_port).unwrap();
    assert_eq!(s.sequence_status().unwrap(), NFS4ERR_BADSESSION);
    let mut s = Session::open(g.nfs_port, 64).unwrap();
    assert_eq!(s.slots, 8, "the restarted server has its configuration");
    assert_eq!(s.attrs(&g.export).unwrap().owner, "0");
}
