//! Deterministic benchmark corpora.
//!
//! * `node_modules`: 40,374 files in 3,578 directories at scale 1 (the tree
//!   from seed 000), laid out like npm's: packages with package.json, README,
//!   LICENSE, lib/, dist/…, scoped `@org/pkg`, nested `node_modules`, and
//!   `.bin/x -> ../pkg/bin/x` symlinks. File sizes follow seed 000's
//!   histogram. No hard links: `rsync -a` (a peer) does not keep them, and
//!   every result is checked with `rsync -anciH`.
//! * `efs-blog`: 10,000 files of 64 KiB in one directory (seed 003).
//! * `large`: four 1 GiB files.
//!
//! `--scale` multiplies file and directory counts (node_modules, efs-blog)
//! or file sizes (large). The same seed and scale give byte-identical trees,
//! including nanosecond mtimes, so runs are comparable.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

/// The corpora `rig gen` writes; the value names are the directory names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    #[value(name = "node_modules")]
    NodeModules,
    #[value(name = "efs-blog")]
    EfsBlog,
    #[value(name = "large")]
    Large,
}

impl Kind {
    /// The directory the corpus is written to under OUT (and its name).
    pub fn name(self) -> &'static str {
        match self {
            Kind::NodeModules => "node_modules",
            Kind::EfsBlog => "efs-blog",
            Kind::Large => "large",
        }
    }

    /// Write the corpus to `out/<name>`.
    pub fn generate(self, out: &Path, scale: f64, seed: u64) -> io::Result<Summary> {
        match self {
            Kind::NodeModules => node_modules(out, scale, seed),
            Kind::EfsBlog => efs_blog(out, scale, seed),
            Kind::Large => large(out, scale, seed),
        }
    }
}

/// SplitMix64: tiny, fast, and stable across versions (unlike `rand`).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.next() as usize % v.len()]
    }
}

/// Seed 000's node_modules size histogram: (upper bound in bytes, share).
/// The remaining 0.3 % is the tail above 94,207 B.
const HISTOGRAM: [(u64, f64); 10] = [
    (184, 0.376),
    (368, 0.121),
    (736, 0.153),
    (1_471, 0.149),
    (2_943, 0.092),
    (5_888, 0.056),
    (11_775, 0.026),
    (23_551, 0.014),
    (47_103, 0.006),
    (94_207, 0.004),
];

fn file_size(rng: &mut Rng) -> u64 {
    let r = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    let mut acc = 0.0;
    let mut lo = 1;
    for (hi, share) in HISTOGRAM {
        acc += share;
        if r < acc {
            return rng.range(lo, hi);
        }
        lo = hi + 1;
    }
    // Tail: log-uniform 92 KiB .. 2 MiB (the 6 MB files are placed apart).
    let e = rng.range(0, 1000) as f64 / 1000.0;
    (94_208.0 * (2_097_152.0f64 / 94_208.0).powf(e)) as u64
}

/// What was generated.
#[derive(Default, Debug)]
pub struct Summary {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
}

/// Writes files with deterministic contents and mtimes.
struct Writer {
    rng: Rng,
    /// 1 MiB of pseudo-random text; files are slices of it at random offsets.
    pool: Vec<u8>,
    sum: Summary,
    base_time: i64,
}

impl Writer {
    fn new(seed: u64) -> Writer {
        let mut rng = Rng::new(seed);
        let alphabet = b"abcdefghijklmnopqrstuvwxyz_{}();=.,\n    ";
        let pool = (0..1 << 20)
            .map(|_| alphabet[rng.next() as usize % alphabet.len()])
            .collect();
        Writer {
            rng,
            pool,
            sum: Summary::default(),
            // 2024-01-01T00:00:00Z
            base_time: 1_704_067_200,
        }
    }

    fn file(&mut self, path: &Path, size: u64, mode: u32) -> io::Result<()> {
        let mut f = fs::File::create(path)?;
        let mut left = size as usize;
        while left > 0 {
            let off = self.rng.next() as usize % (self.pool.len() / 2);
            let n = left.min(self.pool.len() / 2);
            f.write_all(&self.pool[off..off + n])?;
            left -= n;
        }
        drop(f);
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
        self.stamp(path)?;
        self.sum.files += 1;
        self.sum.bytes += size;
        Ok(())
    }

    fn dir(&mut self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)?;
        self.sum.dirs += 1;
        Ok(())
    }

    fn link(&mut self, target: &str, path: &Path) -> io::Result<()> {
        symlink(target, path)?;
        self.stamp(path)?;
        self.sum.symlinks += 1;
        Ok(())
    }

    /// Give `path` (not following symlinks) a deterministic mtime with a
    /// non-zero nanosecond part, so a copy that drops nanoseconds is caught.
    fn stamp(&mut self, path: &Path) -> io::Result<()> {
        let secs = self.base_time + self.rng.range(0, 300 * 86_400) as i64;
        let nsec = self.rng.range(1, 999_999_999) as i64;
        let t = libc::timespec {
            tv_sec: secs,
            tv_nsec: nsec,
        };
        let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: valid path and two timespecs.
        let r = unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                [t, t].as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

const WORDS: [&str; 24] = [
    "core", "util", "parse", "string", "array", "color", "babel", "plugin", "loader", "fs", "path",
    "event", "stream", "glob", "types", "react", "lodash", "json", "config", "async", "debug",
    "semver", "chalk", "yargs",
];
const SUBDIRS: [&str; 10] = [
    "lib",
    "dist",
    "src",
    "types",
    "lib/internal",
    "dist/esm",
    "dist/cjs",
    "test",
    "docs",
    "lib/utils",
];
const EXTS: [&str; 8] = [
    ".js", ".js", ".js", ".d.ts", ".js.map", ".mjs", ".cjs", ".json",
];

/// Generate the node_modules tree under `out/node_modules`.
pub fn node_modules(out: &Path, scale: f64, seed: u64) -> io::Result<Summary> {
    let want_files = ((40_374.0 * scale).round() as u64).max(20);
    let want_dirs = ((3_578.0 * scale).round() as u64).max(4);
    let want_links = ((40.0 * scale).round() as u64).max(2);
    let big_files = (3.0 * scale).round() as u64;
    let mut w = Writer::new(seed);
    let root = out.join(Kind::NodeModules.name());
    w.dir(&root)?;
    w.dir(&root.join(".bin"))?;

    // 1. Directory skeleton: packages (some scoped, some nested) with
    //    subdirectories, until the directory budget is used.
    let mut pkgs: Vec<(PathBuf, String)> = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut n = 0u64;
    // Leave room for the bin/ directories added in step 3.
    while w.sum.dirs + want_links < want_dirs {
        n += 1;
        let name = format!("{}-{}{}", w.rng.pick(&WORDS), w.rng.pick(&WORDS), n);
        let parent = if !pkgs.is_empty() && w.rng.chance(0.2) {
            let host = pkgs[w.rng.next() as usize % pkgs.len()]
                .0
                .join("node_modules");
            if !host.exists() {
                w.dir(&host)?;
            }
            host
        } else {
            root.clone()
        };
        let parent = if w.rng.chance(0.15) {
            let scope = parent.join(format!("@{}", w.rng.pick(&WORDS)));
            if !scope.exists() {
                w.dir(&scope)?;
            }
            scope
        } else {
            parent
        };
        let pkg = parent.join(&name);
        w.dir(&pkg)?;
        dirs.push(pkg.clone());
        let nsub = w.rng.range(0, 4);
        for _ in 0..nsub {
            let sub = *w.rng.pick(&SUBDIRS);
            let p = pkg.join(sub);
            if p.exists() || w.sum.dirs + want_links >= want_dirs {
                continue;
            }
            if let Some(top) = sub.split('/').next().filter(|_| sub.contains('/'))
                && !pkg.join(top).exists()
            {
                w.dir(&pkg.join(top))?;
                dirs.push(pkg.join(top));
            }
            w.dir(&p)?;
            dirs.push(p);
        }
        pkgs.push((pkg, name));
    }

    // 2. Package metadata files, while the file budget allows.
    for (pkg, _) in &pkgs {
        for (f, p) in [("package.json", 1.0), ("README.md", 0.9), ("LICENSE", 0.8)] {
            if w.sum.files + 1 < want_files && w.rng.chance(p) {
                let size = file_size(&mut w.rng);
                w.file(&pkg.join(f), size, 0o644)?;
            }
        }
    }

    // 3. Executables behind .bin symlinks.
    for i in 0..want_links.min(pkgs.len() as u64) {
        let (pkg, name) = &pkgs[(i as usize * 7919) % pkgs.len()];
        let bin = pkg.join("bin");
        if !bin.exists() {
            w.dir(&bin)?;
        }
        let size = w.rng.range(200, 4_000);
        w.file(&bin.join("cli.js"), size, 0o755)?;
        let rel = pkg.strip_prefix(&root).expect("under root");
        let target = format!("../{}/bin/cli.js", rel.display());
        w.link(&target, &root.join(".bin").join(format!("{name}-{i}")))?;
    }

    // 4. A few big bundled files (typescript/esbuild style), ~6 MB.
    for i in 0..big_files {
        let (pkg, _) = &pkgs[(i as usize * 104_729) % pkgs.len()];
        let size = w.rng.range(5_800_000, 6_200_000);
        w.file(&pkg.join(format!("bundle{i}.js")), size, 0o644)?;
    }

    // 5. The rest: sources spread over all package directories.
    let mut k = 0u64;
    while w.sum.files < want_files {
        k += 1;
        let d = dirs[w.rng.next() as usize % dirs.len()].clone();
        let name = format!("{}{}{}", w.rng.pick(&WORDS), k, w.rng.pick(&EXTS));
        let size = file_size(&mut w.rng);
        w.file(&d.join(name), size, 0o644)?;
    }

    // 6. Directory mtimes last (creating entries changes them), deepest first.
    let mut all: Vec<PathBuf> = Vec::new();
    collect_dirs(&root, &mut all)?;
    all.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for d in all {
        w.stamp(&d)?;
    }
    Ok(w.sum)
}

fn collect_dirs(d: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    out.push(d.to_path_buf());
    for e in fs::read_dir(d)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            collect_dirs(&e.path(), out)?;
        }
    }
    Ok(())
}

/// 10,000 × 64 KiB files in one directory (scaled count).
pub fn efs_blog(out: &Path, scale: f64, seed: u64) -> io::Result<Summary> {
    let n = ((10_000.0 * scale).round() as u64).max(10);
    let mut w = Writer::new(seed);
    let dir = out.join(Kind::EfsBlog.name());
    w.dir(&dir)?;
    for i in 0..n {
        w.file(&dir.join(format!("file{i:05}.bin")), 64 * 1024, 0o644)?;
    }
    w.stamp(&dir)?;
    Ok(w.sum)
}

/// Four 1 GiB files (scaled size, at least 1 MiB).
pub fn large(out: &Path, scale: f64, seed: u64) -> io::Result<Summary> {
    let size = ((1u64 << 30) as f64 * scale).max((1 << 20) as f64) as u64;
    let mut w = Writer::new(seed);
    let dir = out.join(Kind::Large.name());
    w.dir(&dir)?;
    for i in 0..4 {
        w.file(&dir.join(format!("large{i}.img")), size, 0o644)?;
    }
    w.stamp(&dir)?;
    Ok(w.sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_histogram() {
        let mut rng = Rng::new(7);
        let n = 200_000;
        let sizes: Vec<u64> = (0..n).map(|_| file_size(&mut rng)).collect();
        let share = |hi: u64| sizes.iter().filter(|&&s| s <= hi).count() as f64 / n as f64;
        assert!((share(184) - 0.376).abs() < 0.01);
        assert!((share(1_471) - (0.376 + 0.121 + 0.153 + 0.149)).abs() < 0.01);
        assert!(share(94_207) > 0.99 && share(94_207) < 0.999);
    }

    #[test]
    fn same_seed_same_tree() {
        let base = std::env::temp_dir().join(format!("rig-corpus-test-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let sa = node_modules(&a, 0.01, 3).unwrap();
        let sb = node_modules(&b, 0.01, 3).unwrap();
        assert_eq!((sa.files, sa.dirs, sa.bytes), (sb.files, sb.dirs, sb.bytes));
        assert_eq!(sa.files, 404);
        assert_eq!(sa.dirs, 36);
        fs::remove_dir_all(&base).unwrap();
    }
}
