//! `--shard SPEC`: `K/N`, `slurm` (a Slurm job array's variables) or `k8s/N` (a
//! Kubernetes Indexed Job's completion index), resolved to a [`Shard`].

use crate::shard::Shard;

/// The most shares a tree is dealt into: far more processes than one DEST serves, and
/// small enough that the deal's per-share tables stay a few MiB.
pub const MAX_SHARDS: u64 = 65536;

/// Resolves `spec`, reading the scheduler's variables through `env`; the error says
/// which variable is missing or wrong, and what was expected.
pub fn resolve(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
    let var = |name: &str| -> Result<u64, String> {
        let v = env(name).ok_or_else(|| {
            format!("--shard {spec}: {name} is not set (not running as a task of a job array?)")
        })?;
        v.trim()
            .parse()
            .map_err(|_| format!("--shard {spec}: {name}={v:?} is not a number"))
    };
    let number = |what: &str, s: &str| -> Result<u64, String> {
        s.parse()
            .map_err(|_| format!("--shard {spec}: {what} {s:?} is not a number"))
    };
    let (index, count) = if spec == "slurm" {
        let id = var("SLURM_ARRAY_TASK_ID")?;
        let count = var("SLURM_ARRAY_TASK_COUNT")?;
        let min = env("SLURM_ARRAY_TASK_MIN")
            .map(|_| var("SLURM_ARRAY_TASK_MIN"))
            .transpose()?
            .unwrap_or(0);
        let step = env("SLURM_ARRAY_TASK_STEP")
            .map(|_| var("SLURM_ARRAY_TASK_STEP"))
            .transpose()?
            .unwrap_or(1)
            .max(1);
        let from_min = id.checked_sub(min).ok_or_else(|| {
            format!("--shard slurm: SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")
        })?;
        if from_min % step != 0 {
            return Err(format!(
                "--shard slurm: SLURM_ARRAY_TASK_ID={id} is not MIN={min} plus a multiple of STEP={step}"
            ));
        }
        (from_min / step, count)
    } else if let Some(n) = spec.strip_prefix("k8s/") {
        (var("JOB_COMPLETION_INDEX")?, number("shard count", n)?)
    } else if let Some((k, n)) = spec.split_once('/') {
        (number("shard index", k)?, number("shard count", n)?)
    } else {
        return Err(format!(
            "--shard {spec}: expected K/N (0 <= K < N), slurm, or k8s/N"
        ));
    };
    if count > MAX_SHARDS {
        return Err(format!(
            "--shard {spec}: {count} shards is more than nfsync deals ({MAX_SHARDS} at most)"
        ));
    }
    if count == 0 || index >= count {
        return Err(format!(
            "--shard {spec}: shard {index} of {count} does not exist (0 <= K < N; the array must have N tasks numbered from its first)"
        ));
    }
    Ok(Shard { index, count })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    fn shard(index: u64, count: u64) -> Result<Shard, String> {
        Ok(Shard { index, count })
    }

    #[test]
    fn absurd_shard_counts_are_refused() {
        assert_eq!(resolve("65535/65536", with(&[])), shard(65535, 65536));
        for spec in [
            "4294967295/4294967296",
            "18446744073709551614/18446744073709551615",
            "0/65537",
            "k8s/99999999",
        ] {
            let e = resolve(spec, with(&[("JOB_COMPLETION_INDEX", "0")])).unwrap_err();
            assert!(e.contains("65536 at most"), "{spec}: {e}");
        }
    }

    #[test]
    fn plain_slurm_and_k8s_specs() {
        assert_eq!(resolve("2/4", with(&[])), shard(2, 4));
        assert!(
            resolve("4/4", with(&[]))
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(resolve("0/0", with(&[])).is_err());
        assert!(
            resolve("a/4", with(&[]))
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            resolve("3", with(&[]))
                .unwrap_err()
                .contains("expected K/N")
        );
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "3"),
        ];
        assert_eq!(resolve("slurm", with(&slurm)), shard(2, 4));
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        assert_eq!(resolve("slurm", with(&stepped)), shard(3, 4));
        let e = resolve("slurm", with(&slurm[1..])).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_ID is not set"), "{e}");
        let e = resolve("slurm", with(&[("SLURM_ARRAY_TASK_ID", "1")])).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_COUNT is not set"), "{e}");
        let k8s = [("JOB_COMPLETION_INDEX", "3")];
        assert_eq!(resolve("k8s/8", with(&k8s)), shard(3, 8));
        assert!(
            resolve("k8s/3", with(&k8s))
                .unwrap_err()
                .contains("does not exist")
        );
        let e = resolve("k8s/8", with(&[])).unwrap_err();
        assert!(e.contains("JOB_COMPLETION_INDEX is not set"), "{e}");
        let e = resolve("k8s/8", with(&[("JOB_COMPLETION_INDEX", "x")])).unwrap_err();
        assert!(e.contains("is not a number"), "{e}");
    }
}
