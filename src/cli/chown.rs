//! `--chown=USER:GROUP`: names or numbers, looked up once before the run.

use std::ffi::CString;

/// The uid and gid `--chown` asks for (`None` for a half left empty: `U`, `U:`, `:G`).
pub fn parse_chown(spec: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let (user, group) = spec.split_once(':').unwrap_or((spec, ""));
    let uid = (!user.is_empty()).then(|| lookup(user, true)).transpose()?;
    let gid = (!group.is_empty())
        .then(|| lookup(group, false))
        .transpose()?;
    Ok((uid, gid))
}

/// A number, or a name from the user or group database.
fn lookup(name: &str, user: bool) -> Result<u32, String> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(n);
    }
    let what = if user { "user" } else { "group" };
    let unknown = || format!("--chown: unknown {what} {name:?}");
    let c = CString::new(name).map_err(|_| unknown())?;
    // getpwnam/getgrnam before any worker thread exists: nothing else calls them.
    // SAFETY: `c` is a valid C string; the returned record is read at once.
    let id = unsafe {
        if user {
            let pw = libc::getpwnam(c.as_ptr());
            (!pw.is_null()).then(|| (*pw).pw_uid)
        } else {
            let gr = libc::getgrnam(c.as_ptr());
            (!gr.is_null()).then(|| (*gr).gr_gid)
        }
    };
    id.ok_or_else(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chown_takes_names_numbers_and_halves() {
        assert_eq!(parse_chown("0:0"), Ok((Some(0), Some(0))));
        assert_eq!(parse_chown("root"), Ok((Some(0), None)));
        assert_eq!(parse_chown("root:"), Ok((Some(0), None)));
        assert_eq!(parse_chown(":root"), Ok((None, Some(0))));
        assert_eq!(parse_chown("12:34"), Ok((Some(12), Some(34))));
        assert!(parse_chown("no-such-user-here:").is_err());
    }
}
