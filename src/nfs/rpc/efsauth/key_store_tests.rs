use super::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use super::super::key::BITS;

fn env(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<std::ffi::OsString> {
    move |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| std::ffi::OsString::from(v))
    }
}

#[test]
fn where_the_key_lives() {
    let p = |root, e: &dyn Fn(&str) -> Option<std::ffi::OsString>| {
        path_for(root, e).map(|p| p.display().to_string())
    };
    let home = env(&[("HOME", "/home/u")]);
    assert_eq!(
        p(true, &home).unwrap(),
        "/var/lib/nfsync/efs-client-key.pem"
    );
    assert_eq!(
        p(false, &home).unwrap(),
        "/home/u/.local/state/nfsync/efs-client-key.pem"
    );
    let xdg = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/s")]);
    assert_eq!(p(false, &xdg).unwrap(), "/s/nfsync/efs-client-key.pem");
    let named = env(&[("NFSYNC_EFS_KEY", "/k.pem")]);
    assert_eq!(p(true, &named).unwrap(), "/k.pem");
    assert_eq!(p(false, &env(&[])), None);
}

/// Two runs making the key at once end up with one key, and no temporary file.
#[test]
fn concurrent_makers_agree() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.pem");
    let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
        let a = s.spawn(|| load_or_create(&path).unwrap().pkcs8_der().to_vec());
        let b = s.spawn(|| load_or_create(&path).unwrap().pkcs8_der().to_vec());
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    assert_eq!(keys[0], keys[1]);
    let on_disk = ClientKey::from_pem(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(on_disk.pkcs8_der(), &keys[0][..]);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn made_once_with_mode_0600_and_then_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/nfsync/key.pem");
    let a = load_or_create(&path).unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let parent = fs::metadata(path.parent().unwrap()).unwrap();
    assert_eq!(parent.permissions().mode() & 0o777, 0o700);
    assert_eq!(a.sign(b"x").len() * 8, BITS);
    let b = load_or_create(&path).unwrap();
    assert_eq!(a.pkcs8_der(), b.pkcs8_der());
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
}

/// Both ways of linking a new key in leave only the key behind.
#[test]
fn the_named_fallback_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let fd = trust::open_dir(Trust::OWNED, rustix::fs::CWD, dir.path(), false).unwrap();
    let pem = b"-----BEGIN PRIVATE KEY-----\n";
    link_named(&fd, "a.pem".as_ref(), pem).unwrap();
    assert_eq!(link_named(&fd, "a.pem".as_ref(), pem), Err(Errno::EXIST));
    link_new(&fd, "b.pem".as_ref(), pem).unwrap();
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["a.pem", "b.pem"]);
    assert_eq!(fs::read(dir.path().join("b.pem")).unwrap(), pem);
}

/// A key file made by us, then changed as each case says: the refusal names the file
/// and the reason, and the file is left as it was.
fn refused(change: impl Fn(&Path)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.pem");
    fs::write(&path, ClientKey::from_pem(FIXTURE).unwrap().to_pem()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    load_or_create(&path).expect("a good key file is used");
    change(&path);
    let before = fs::symlink_metadata(&path).unwrap();
    let e = load_or_create(&path).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    let after = fs::symlink_metadata(&path).unwrap();
    assert_eq!(before.ino(), after.ino(), "left alone");
    e
}

const FIXTURE: &[u8] = include_bytes!("../../../../tests/fixtures/efs/key.pem");

fn chmod(mode: u32) -> impl Fn(&Path) {
    move |p| fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap()
}

#[test]
fn a_key_others_may_write_or_read_is_refused() {
    let e = refused(chmod(0o620));
    assert!(
        e.ends_with("is group-writable: refusing it (chmod 600)"),
        "{e}"
    );
    assert!(e.starts_with("key file /"), "{e}");
    let e = refused(chmod(0o602));
    assert!(e.contains("is writable by others: refusing it"), "{e}");
    let e = refused(chmod(0o644));
    assert!(
        e.contains("is group-readable: refusing it (chmod 600)"),
        "{e}"
    );
}

#[test]
fn a_key_owned_by_another_user_is_refused() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let e = refused(|p| {
        rustix::fs::chown(p, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
    });
    assert!(
        e.contains("is owned by uid 65534 (neither root nor us)"),
        "{e}"
    );
}

/// A symlink as the key file is refused whoever owns it (even our own: the file must
/// be named itself), and a foreign symlink on the way under the symlink rule.
#[test]
fn a_symlinked_key_is_refused() {
    let e = refused(|p| {
        let real = p.with_file_name("real.pem");
        fs::rename(p, &real).unwrap();
        symlink(&real, p).unwrap();
    });
    assert!(e.contains("is a symlink: refusing it"), "{e}");
    let e = refused(|p| {
        fs::remove_file(p).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    });
    assert!(e.contains("is not a regular file"), "{e}");
}

/// `NFSYNC_EFS_KEY` gets no exemption: a key reached through another user's symlink
/// is refused like the default one, and so is a group-writable one.
#[test]
fn nfsync_efs_key_obeys_the_same_rule() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    let key = real.join("k.pem");
    fs::write(&key, ClientKey::from_pem(FIXTURE).unwrap().to_pem()).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o660)).unwrap();
    symlink(&real, dir.path().join("via")).unwrap();
    let named = dir.path().join("via/k.pem");
    let text = named.display().to_string();
    let env = |k: &str| (k == "NFSYNC_EFS_KEY").then(|| named.clone().into_os_string());
    let path = path_for(true, &env).unwrap();
    assert_eq!(path, named);
    let e = load_or_create(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("key file {text} is group-writable: refusing it (chmod 600)")
    );
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(load_or_create(&path).is_ok(), "our own link is followed");
    if !rustix::process::geteuid().is_root() {
        return;
    }
    rustix::fs::chownat(
        rustix::fs::CWD,
        dir.path().join("via"),
        Some(rustix::fs::Uid::from_raw(65534)),
        None,
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let e = load_or_create(&path).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("key file {text}: ")) && e.contains("symlink owned by uid 65534"),
        "{e}"
    );
}

#[test]
fn refusal_reasons() {
    let reg = 0o100_000;
    assert_eq!(untrusted(reg | 0o600, 0, 0), None);
    assert_eq!(untrusted(reg | 0o600, 1000, 1000), None);
    assert_eq!(untrusted(reg | 0o400, 0, 1000), None);
    assert!(untrusted(reg | 0o600, 1000, 0).is_some());
    assert!(untrusted(0o040_700, 0, 0).is_some(), "a directory");
}
