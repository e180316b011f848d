//! `--chown`, `--usermap` and `--groupmap` into the two maps the engine applies.

use crate::options::idmap::{Db, IdMap, lookup};

/// The user and group maps asked for: `--chown=U:G` (either half may be empty: `U`,
/// `U:`, `:G`) is `--usermap=*:U --groupmap=*:G`, and like rsync it cannot be mixed
/// with them.
pub fn id_maps(
    chown: Option<&str>,
    usermap: Option<&str>,
    groupmap: Option<&str>,
) -> Result<(Option<IdMap>, Option<IdMap>), String> {
    let Some(spec) = chown else {
        return Ok((
            usermap.map(|s| IdMap::parse(s, Db::Users)).transpose()?,
            groupmap.map(|s| IdMap::parse(s, Db::Groups)).transpose()?,
        ));
    };
    if usermap.is_some() || groupmap.is_some() {
        return Err("--chown cannot be used with --usermap or --groupmap".into());
    }
    let (user, group) = spec.split_once(':').unwrap_or((spec, ""));
    let map = |name: &str, db| -> Result<Option<IdMap>, String> {
        if name.is_empty() {
            return Ok(None);
        }
        let id = lookup(name, db).map_err(|e| format!("--chown: {e}"))?;
        Ok(Some(IdMap::all_to(id, db)))
    };
    Ok((map(user, Db::Users)?, map(group, Db::Groups)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chown(spec: &str) -> Result<(Option<u32>, Option<u32>), String> {
        let (u, g) = id_maps(Some(spec), None, None)?;
        Ok((u.map(|m| m.map(4242, false)), g.map(|m| m.map(4242, false))))
    }

    #[test]
    fn chown_takes_names_numbers_and_halves() {
        assert_eq!(chown("0:0"), Ok((Some(0), Some(0))));
        assert_eq!(chown("root"), Ok((Some(0), None)));
        assert_eq!(chown("root:"), Ok((Some(0), None)));
        assert_eq!(chown(":root"), Ok((None, Some(0))));
        assert_eq!(chown("12:34"), Ok((Some(12), Some(34))));
        assert!(chown("no-such-user-here:").is_err());
        assert!(id_maps(Some("1:1"), Some("*:2"), None).is_err());
    }
}
