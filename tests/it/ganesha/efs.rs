//! EFS's bound connections, against nfs-ganesha NFSv4.1 behind a partition shim
//! ([`PartitionShim`]) that answers the bind call from a script: how many connections
//! nfsync keeps for each answer, that no NFS record precedes the bind and no session
//! spans two partitions, that the bind goes inside TLS, and that the run ends exact
//! (`rsync -anciH --delete`).

use std::path::Path;

use nfsync::nfs::rpc::partition::MAX_PROBES;

use crate::support::efs_shim::{Answer, ConnLog, PartitionShim};
use crate::support::ganesha::{self, Export, Proto};
use crate::support::tls::{self, Ca, Stunnel};
use crate::support::{Scratch, Tree, describe, rsync_diff_with, run_nfsync};

use Answer::*;

/// A tree with enough calls in flight to use every connection: small files in a few
/// directories, a hard link, a symlink and one file of several WRITEs.
fn tree(src: &Path) {
    let t = Tree::new(src);
    for d in 0..4 {
        for f in 0..40 {
            t.random_file(
                format!("d{d}/f{f}"),
                (f * 97 % 3000) as u64,
                (d * 100 + f) as u64,
            );
        }
    }
    t.random_file("big", 5_000_000, 3)
        .symlink("link", "d1/f1")
        .hardlink("hard", "d2/f2");
}

/// Copies a new tree through a shim answering `script` then `then` (EFS allowing 5
/// connections per partition), with `?efs` when `efs`; the run must succeed and end
/// exact, and the shim's rules hold. Returns the shim for the test's own checks.
fn copy_through(script: &[Answer], then: Answer, efs: bool) -> Option<PartitionShim> {
    copy_through_shim(script, then, efs, Cut::No)
}

/// How the shim cuts connections mid-run.
#[derive(Clone, Copy)]
enum Cut {
    /// None cut.
    No,
    /// One, after this many NFS records.
    One(usize),
    /// All, after this many NFS records, and this answer to every bind from then on.
    All(usize, Answer),
}

fn copy_through_shim(
    script: &[Answer],
    then: Answer,
    efs: bool,
    cut: Cut,
) -> Option<PartitionShim> {
    let export = ganesha::shared(Proto::V41)?;
    let s = Scratch::new();
    let src = s.join("src");
    tree(&src);
    let shim = PartitionShim::start(export.nfs_port, script, then, 5);
    if !efs {
        shim.not_efs();
    }
    match cut {
        Cut::No => {}
        Cut::One(n) => shim.cut_after(n),
        Cut::All(n, then) => shim.cut_all_after(n, then),
    }
    let rel = format!("efs-{}", s.path().file_name().unwrap().to_string_lossy());
    let url = Export {
        nfs_port: shim.port,
        ..export.clone()
    }
    .url(&rel, if efs { "efs" } else { "" });
    let out = run_nfsync(&["-aH", "--delete", "--timeout", "20"], &src, &url);
    assert!(
        out.status.success(),
        "{}\nconnections: {:?}",
        describe(&out),
        shim.conns()
    );
    let diff = rsync_diff_with(&src, &export.path.join(&rel), &["--omit-link-times"]);
    assert!(
        diff.is_empty(),
        "the run through the shim is not exact:\n{diff}"
    );
    shim.assert_rules_kept();
    Some(shim)
}

/// The answers to the bind calls, and how many NFS records each connection carried.
fn summary(conns: &[ConnLog]) -> Vec<(Option<Answer>, bool)> {
    conns.iter().map(|c| (c.bind, c.nfs_records > 0)).collect()
}

/// EFS binding every connection to one partition: the default four connections, each
/// bound before it carries NFS, all with one identifier.
#[test]
fn efs_binding_every_connection_to_one_partition_gives_four() {
    let Some(shim) = copy_through(&[], Ready(1), true) else {
        return;
    };
    assert_eq!(summary(&shim.conns()), vec![(Some(Ready(1)), true); 4]);
    assert_eq!(shim.identifiers(), 1);
    assert_eq!(shim.incarnations(), vec![1]);
}

/// RETRY, PREFERRED and another partition's READY are closed unused, and others tried
/// until four share the first one's partition.
#[test]
fn efs_connections_on_other_partitions_are_closed_and_probed_again() {
    let script = [Ready(1), Retry, Preferred(2), Ready(2), Ready(1), Ready(1)];
    let Some(shim) = copy_through(&script, Ready(1), true) else {
        return;
    };
    let unused = |a| (Some(a), false);
    assert_eq!(
        summary(&shim.conns()),
        vec![
            (Some(Ready(1)), true),
            unused(Retry),
            unused(Preferred(2)),
            unused(Ready(2)),
            (Some(Ready(1)), true),
            (Some(Ready(1)), true),
            (Some(Ready(1)), true),
        ]
    );
}

/// RETRY_LATER or ERROR on an added connection: no more are tried, and the run goes on
/// with the ones it has.
#[test]
fn efs_retry_later_or_error_stops_adding_connections() {
    for stop in [RetryLater, Error] {
        let Some(shim) = copy_through(&[Ready(1), Ready(1), stop], Ready(1), true) else {
            return;
        };
        assert_eq!(
            summary(&shim.conns()),
            vec![
                (Some(Ready(1)), true),
                (Some(Ready(1)), true),
                (Some(stop), false)
            ],
            "{stop:?}"
        );
    }
}

/// A first answer other than READY: that one connection carries the run, and no other
/// is tried (there is no partition to add it to).
#[test]
fn efs_first_answer_not_ready_means_one_connection() {
    for first in [Retry, Preferred(2), RetryLater, Error] {
        let Some(shim) = copy_through(&[first], Ready(1), true) else {
            return;
        };
        assert_eq!(
            summary(&shim.conns()),
            vec![(Some(first), true)],
            "{first:?}"
        );
    }
}

/// A server that does not know the bind call (PROG_UNAVAIL): that connection is
/// closed, and one plain connection carries the run with no bind call again.
#[test]
fn efs_prog_unavail_means_one_unbound_connection() {
    let Some(shim) = copy_through(&[ProgUnavail], Ready(1), true) else {
        return;
    };
    assert_eq!(
        summary(&shim.conns()),
        vec![(Some(ProgUnavail), false), (None, true)]
    );
}

/// A server that is not EFS (an IP address without `?efs`) never gets the bind call and
/// keeps today's four connections.
#[test]
fn efs_no_bind_call_to_a_server_that_is_not_efs() {
    let Some(shim) = copy_through(&[], Ready(1), false) else {
        return;
    };
    assert_eq!(summary(&shim.conns()), vec![(None, true); 4]);
}

/// One bound connection cut mid-run: its calls go again on the others of the same
/// partition, a new connection bound to it takes its place, and the run still ends
/// exact.
#[test]
fn efs_bound_connection_cut_mid_run_still_ends_exact() {
    let Some(shim) = copy_through_shim(&[], Ready(1), true, Cut::One(100)) else {
        return;
    };
    assert_eq!(shim.cuts(), 1);
    assert_eq!(summary(&shim.conns()), vec![(Some(Ready(1)), true); 5]);
}

/// Every bound connection lost at once, and EFS now binds the client only to another
/// partition: nfsync starts a new set there as after a server restart, with a new
/// session (never the old one on the new partition), and the run still ends exact.
#[test]
fn efs_partition_lost_mid_run_moves_the_client_with_a_new_session() {
    let Some(shim) = copy_through_shim(&[], Ready(1), true, Cut::All(100, Ready(2))) else {
        return;
    };
    assert_eq!(shim.cuts(), 1);
    let conns = shim.conns();
    let on = |p| {
        conns
            .iter()
            .filter(|c| c.bind == Some(Ready(p)) && c.nfs_records > 0)
            .count()
    };
    assert_eq!(on(1), 4, "{conns:?}");
    assert!(
        on(2) >= 1,
        "no connection on the new partition carried the run: {conns:?}"
    );
    // Each slot searched at most once (the first alone once none was left; another
    // may have begun before the cut reached them all), each search within its bound.
    let most = 4 + 4 * (MAX_PROBES as usize + 1);
    assert!(
        conns.len() <= most,
        "{} connections, more than {most}",
        conns.len()
    );
    // One identifier for the run; the new set is the next incarnation.
    assert_eq!(shim.identifiers(), 1);
    assert_eq!(shim.incarnations(), vec![1, 2]);
}

/// `?tls`: the bind goes inside TLS, as the first record after the handshake (the shim
/// sits behind stunnel and sees plaintext), and the run ends exact.
#[test]
fn efs_binds_inside_tls() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    if !tls::available() {
        return;
    }
    let s = Scratch::new();
    let src = s.join("src");
    tree(&src);
    let shim = PartitionShim::start(export.nfs_port, &[], Ready(1), 5);
    let ca = Ca::new(&s.join("pki"), "test-ca");
    let (cert, key) = ca.server_cert(&s.join("pki"));
    let st = Stunnel::start(&s.join("pki"), &cert, &key, shim.port);
    let url = Export {
        nfs_port: st.port,
        ..export.clone()
    }
    .url("efs-tls", &format!("efs&tls-ca={}", ca.cert.display()));
    let out = run_nfsync(&["-aH", "--timeout", "20"], &src, &url);
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff_with(&src, &export.path.join("efs-tls"), &["--omit-link-times"]);
    assert!(
        diff.is_empty(),
        "the run through TLS and the shim is not exact:\n{diff}"
    );
    shim.assert_rules_kept();
    assert_eq!(summary(&shim.conns()), vec![(Some(Ready(1)), true); 4]);
}

/// `--check` to an EFS host says how its connections were bound: the partition and
/// how many; to a server that does not know the bind call, that it is not EFS.
#[test]
fn check_names_the_partition_and_the_connections_bound() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let s = Scratch::new();
    let rel = format!("check-{}", s.path().file_name().unwrap().to_string_lossy());
    std::fs::create_dir(export.path.join(&rel)).unwrap();
    for (first, want) in [
        (Ready(7), "4 connections to 127.0.0.1"),
        (ProgUnavail, "1 connection to 127.0.0.1"),
    ] {
        let shim = PartitionShim::start(export.nfs_port, &[first], Ready(7), 5);
        let url = Export {
            nfs_port: shim.port,
            ..export.clone()
        }
        .url(&rel, "efs");
        let out = crate::support::nfsync()
            .args(["--check", "--json", "--jobs", "4", &url])
            .output()
            .expect("run nfsync");
        assert!(out.status.success(), "{}", describe(&out));
        let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let conn = f["connection"].as_str().unwrap();
        assert!(conn.contains(want), "{conn}");
        let bound = "bound to EFS partition 0707070707070707…";
        match first {
            Ready(_) => assert!(conn.contains(bound), "{conn}"),
            _ => assert!(conn.contains("not EFS"), "{conn}"),
        }
    }
}

/// EFS's bind call (program 400123) goes only to names of EFS's own form under an AWS
/// suffix: `fs-deadbeef.nfs.us-east-1.amazonaws.com`, `fs-01.nyc.corp.com` and
/// `fs-deadbeef.efs.us-east-1.corp.example.com`, each resolved to 127.0.0.1 through a
/// hosts file of that run's own mount namespace, get none; the EFS name itself gets it
/// (ganesha does not serve it, and the run goes on unbound). Every copy is exact. The
/// calls are read where they pass a relay in front of ganesha.
#[test]
fn only_efs_names_get_the_bind_call() {
    use std::sync::{Arc, Mutex};
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let progs: Arc<Mutex<Vec<u32>>> = Arc::default();
    let seen = progs.clone();
    let mut servers = crate::support::net::Servers::default();
    let port = servers.rewriting_relay(
        export.nfs_port,
        Arc::new(move |call: &[u8], _rep: &mut Vec<u8>| {
            if let Some(p) = call.get(12..16) {
                seen.lock()
                    .unwrap()
                    .push(u32::from_be_bytes(p.try_into().unwrap()));
            }
        }),
    );
    let dir = Scratch::new();
    let rel = format!("efs-names-{}", std::process::id());
    let src = dir.join("src");
    Tree::new(&src).file("a", "a").random_file("d/b", 3000, 1);
    let machine = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    for (i, (name, bound)) in [
        ("fs-deadbeef.nfs.us-east-1.amazonaws.com", false),
        ("fs-01.nyc.corp.com", false),
        ("fs-deadbeef.efs.us-east-1.corp.example.com", false),
        ("fs-deadbeef.efs.us-east-1.amazonaws.com", true),
    ]
    .into_iter()
    .enumerate()
    {
        progs.lock().unwrap().clear();
        let hosts = dir.join(format!("hosts-{i}"));
        std::fs::write(&hosts, format!("{machine}\n127.0.0.1 {name}\n")).unwrap();
        let sub = format!("{rel}/{i}");
        let url = format!(
            "nfs://{name}:{port}{}/{sub}?version=4.1",
            export.path.display()
        );
        let out = std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$0" /etc/hosts && exec "$@""#)
            .arg(&hosts)
            .arg(crate::support::bin())
            .args(["-r", "--timeout", "20"])
            .arg(format!("{}/", src.display()))
            .arg(&url)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", describe(&out));
        let diff = rsync_diff_with(
            &src,
            &export.path.join(&sub),
            &["--omit-link-times", "--no-t"],
        );
        assert!(diff.is_empty(), "{name}:\n{diff}");
        let sent = progs.lock().unwrap().contains(&400_123);
        assert_eq!(sent, bound, "{name}: EFS's bind call sent: {sent}");
    }
    let _ = std::fs::remove_dir_all(export.path.join(&rel));
}
