//! The controller driven by simulated servers: fixed service latency with a capacity,
//! gradual saturation, and throughput curves measured on the rig.

use super::*;

/// A server with a fixed service latency that completes at most `rate` operations
/// per second; beyond `rate × latency` requests in flight they queue.
struct Server {
    latency: f64,
    rate: f64,
}

/// (operations per second, mean latency) with `n` in flight.
trait Model {
    fn serve(&self, n: usize) -> (f64, f64);
}

impl Server {
    fn optimum(&self) -> f64 {
        self.rate * self.latency
    }
}

impl Model for Server {
    fn serve(&self, n: usize) -> (f64, f64) {
        let n = n as f64;
        (
            (n / self.latency).min(self.rate),
            self.latency.max(n / self.rate),
        )
    }
}

/// A client or server that slows down gradually as jobs are added (a busy CPU, say):
/// each job adds `1 / capacity` to everyone's latency, so throughput
/// `n / (latency + n / capacity)` keeps rising, ever more slowly, while latency
/// grows linearly: more jobs pay less and less but never hurt.
struct Saturating {
    latency: f64,
    capacity: f64,
}

impl Model for Saturating {
    fn serve(&self, n: usize) -> (f64, f64) {
        let lat = self.latency + n as f64 / self.capacity;
        (n as f64 / lat, lat)
    }
}

/// Throughput measured at a few job counts (interpolated on log2 of the jobs),
/// latency by Little's law: what the rig showed, for shapes the two models above
/// do not have.
struct Measured(&'static [(usize, f64)]);

impl Model for Measured {
    fn serve(&self, n: usize) -> (f64, f64) {
        let x = (n as f64).log2();
        let pts = self.0;
        let tput = match pts.iter().position(|p| p.0 >= n) {
            Some(0) => pts[0].1 * n as f64 / pts[0].0 as f64,
            None => pts[pts.len() - 1].1,
            Some(i) => {
                let (a, b) = (pts[i - 1], pts[i]);
                let (xa, xb) = ((a.0 as f64).log2(), (b.0 as f64).log2());
                a.1 + (b.1 - a.1) * (x - xa) / (xb - xa)
            }
        };
        (tput, n as f64 / tput)
    }
}

/// Drives the controller for `secs` seconds in 100 ms intervals (the engine's tick) from `t0`, with a
/// deterministic ±5 % noise. Returns the time reached and the operations completed.
fn drive(c: &mut Controller, s: &impl Model, t0: f64, secs: f64, seed: &mut u64) -> (f64, f64) {
    drive_noisy(c, s, t0, secs, seed, 0.05)
}

/// A deterministic factor in 1 ± `amp` (a linear congruential generator).
fn noise(seed: &mut u64, amp: f64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    1.0 - amp + 2.0 * amp * ((*seed >> 33) as f64 / (1u64 << 31) as f64)
}

/// [`drive`] with a noise of ± `amp` per 100 ms interval.
fn drive_noisy(
    c: &mut Controller,
    s: &impl Model,
    t0: f64,
    secs: f64,
    seed: &mut u64,
    amp: f64,
) -> (f64, f64) {
    let dt = 0.1;
    let mut t = t0;
    let mut total = 0.0;
    while t < t0 + secs - 1e-9 {
        t += dt;
        let noise = noise(seed, amp);
        let (tput, lat) = s.serve(c.jobs());
        let done = (tput * dt * noise).round() as u64;
        total += tput * dt;
        c.on_interval(
            Duration::from_secs_f64(t),
            done,
            0,
            Duration::from_secs_f64(done as f64 * lat),
        );
    }
    (t, total)
}

/// The share of the server's capacity used over the next 5 s, probes included:
/// what a user would see.
fn efficiency(c: &mut Controller, s: &Server, t: f64, seed: &mut u64) -> f64 {
    let (_, done) = drive(c, s, t, 5.0, seed);
    done / (s.rate * 5.0)
}

#[test]
fn converges_near_the_optimum() {
    for (latency, rate) in [
        (0.001, 2_000.0),
        (0.0015, 20_000.0),
        (0.01, 3_000.0),
        (0.0003, 50_000.0),
    ] {
        for mut seed in 1..=5u64 {
            let s = Server { latency, rate };
            let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
            // From 64 down to an optimum of 2 is eight kept cuts; one noisy epoch
            // breaks the chain, and the next walk down comes a probe period (up to
            // 4 s) later: 15 s, not 10, before it must have settled.
            let (t, _) = drive(&mut c, &s, 0.0, 15.0, &mut seed);
            let eff = efficiency(&mut c, &s, t, &mut seed);
            assert!(
                eff >= 0.9,
                "latency {latency}: jobs {} gives {eff:.2} of the best ({:?})",
                c.jobs(),
                c.report().history
            );
            assert!(
                (c.jobs() as f64) <= 4.0 * s.optimum() + 8.0,
                "latency {latency}: jobs {} far above the optimum {}",
                c.jobs(),
                s.optimum()
            );
            // Settled: few changes in the last 5 s.
            let changes_after_15s = c.report().history.iter().filter(|h| h.0 > 15.0).count();
            assert!(
                changes_after_15s <= 4,
                "still searching: {:?}",
                c.report().history
            );
        }
    }
}

#[test]
fn a_short_run_gets_near_the_best_fixed_value() {
    // One package tree copied in 1–2 s. At 0.3 s per slow-start epoch,
    // auto spent most of such a run below the right value. Servers whose best level
    // is 256 jobs, a 1.5 s run: auto must do ≥ 90 % of the work of a fixed 256.
    for (latency, rate) in [(0.001, 256_000.0), (0.004, 64_000.0), (0.01, 25_600.0)] {
        let s = Server { latency, rate };
        assert_eq!(s.optimum().round(), 256.0);
        for mut seed in 1..=10u64 {
            let mut fixed = Controller::new(Jobs::Fixed(256), Bounds::MOUNT);
            let (_, best) = drive(&mut fixed, &s, 0.0, 1.5, &mut seed);
            let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
            let (_, done) = drive(&mut c, &s, 0.0, 1.5, &mut seed);
            assert!(
                done >= 0.9 * best,
                "latency {latency}: auto did {:.3} of fixed 256 ({:?})",
                done / best,
                c.report().history
            );
        }
    }
}

#[test]
fn backs_off_on_overload() {
    // Optimum 4 in flight; starting at 64 (a mount) or 256 (nfs://'s RPC window,
    // no slow start) queues at the server.
    for (start, mut seed) in [Bounds::MOUNT, Bounds::nfs(256)]
        .into_iter()
        .flat_map(|st| (1..=5u64).map(move |seed| (st, seed)))
    {
        let s = Server {
            latency: 0.002,
            rate: 2_000.0,
        };
        let mut c = Controller::new(Jobs::Auto, start);
        let (t, _) = drive(&mut c, &s, 0.0, 15.0, &mut seed);
        let h = c.report().history;
        assert!(
            c.jobs() <= 12,
            "did not back off from {}: {} jobs ({h:?})",
            start.start,
            c.jobs()
        );
        assert!(efficiency(&mut c, &s, t, &mut seed) >= 0.9);
    }
}

#[test]
fn follows_a_latency_change() {
    let fast = Server {
        latency: 0.001,
        rate: 5_000.0,
    };
    let slow = Server {
        latency: 0.01,
        rate: 5_000.0,
    };
    for mut seed in 1..=5u64 {
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        let (t, _) = drive(&mut c, &fast, 0.0, 10.0, &mut seed);
        let eff = efficiency(&mut c, &fast, t, &mut seed);
        assert!(eff >= 0.9, "fast phase: {eff:.2} at {}", c.jobs());
        let before = c.jobs();
        let (t, _) = drive(&mut c, &slow, t + 5.0, 10.0, &mut seed);
        assert!(c.jobs() > before, "did not raise jobs when latency rose");
        let eff = efficiency(&mut c, &slow, t, &mut seed);
        let h = c.report().history;
        assert!(
            eff >= 0.9,
            "slow phase: {eff:.2} at jobs {} ({h:?})",
            c.jobs()
        );
    }
}

#[test]
fn latency_that_buys_throughput_is_not_cut_again_and_again() {
    // Past the knee (100 jobs) every job still adds throughput but latency doubles:
    // the latency guard tries a cut, loses throughput, and must then leave the
    // value alone instead of trying the same cut every other epoch.
    let s = Saturating {
        latency: 0.01,
        capacity: 10_000.0,
    };
    for mut seed in 1..=5u64 {
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        drive(&mut c, &s, 0.0, 12.0, &mut seed);
        let h = c.report().history;
        // a -> b < a -> a: a cut tried and undone. Scheduled probes come at least
        // PROBE_MIN apart; a guard that does not learn retries every other epoch.
        let undone: Vec<f64> = h
            .windows(3)
            .filter(|x| x[1].1 < x[0].1 && x[2].1 == x[0].1)
            .map(|x| x[1].0)
            .collect();
        assert!(
            undone.windows(2).all(|u| u[1] - u[0] >= 1.5),
            "the same cut again and again at {undone:?}: {h:?}"
        );
        let (tput, _) = s.serve(c.jobs());
        assert!(tput >= 0.7 * s.capacity, "stopped low: {h:?}");
    }
}

#[test]
fn sublinear_gains_still_climb_in_slow_start() {
    // nfs:// at a 10 ms RTT on a busy two-core box (benches/results/sweep-latest.md):
    // each doubling up to 256 paid +30 % and +23 %, well short of AzCopy's 1.5×,
    // then nothing. Runs there last a few seconds, so slow start must get there,
    // not leave it to probes seconds apart.
    let s = Measured(&[(64, 1250.0), (128, 1640.0), (256, 2020.0), (512, 2000.0)]);
    for mut seed in 1..=5u64 {
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        let (_, done) = drive(&mut c, &s, 0.0, 3.0, &mut seed);
        let h = c.report().history;
        assert!(c.jobs() >= 256, "stopped at {}: {h:?}", c.jobs());
        assert!(
            done >= 0.85 * 2020.0 * 3.0,
            "{:.2} of the best in the first 3 s: {h:?}",
            done / (2020.0 * 3.0)
        );
    }
}

#[test]
fn a_shallow_then_steeper_curve_is_climbed() {
    // nfs:// on a busy two-core box (benches/results/sweep-latest.md): 64 → 128 jobs
    // paid +13 %, 128 → 256 +24 %, 256 → 512 +10 %; a 1.5× probe from 64 gains only
    // ~7 %. A controller that wants +10 % per probe stays at 64 (0.65 of the best).
    let s = Measured(&[(64, 1500.0), (128, 1700.0), (256, 2100.0), (512, 2300.0)]);
    let mut effs = Vec::new();
    for i in 1..=10u64 {
        let mut seed = i;
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        let (_, done) = drive(&mut c, &s, 0.0, 30.0, &mut seed);
        let eff = done / (2300.0 * 30.0);
        assert!(
            eff >= 0.85,
            "seed {i}: {eff:.2} of the best fixed value, ending at {} ({:?})",
            c.jobs(),
            c.report().history
        );
        // The same with the noise of a loaded machine (±20 % per 100 ms interval):
        // probes misjudge often, but must not leave most runs low.
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        let (_, done) = drive_noisy(&mut c, &s, 0.0, 30.0, &mut seed, 0.2);
        effs.push(done / (2300.0 * 30.0));
    }
    effs.sort_by(f64::total_cmp);
    assert!(effs[5] >= 0.8, "under noise: {effs:.2?}");
}

#[test]
fn a_ceiling_is_kept_and_noise_does_not_walk_it_down() {
    // nfs:// on a two-core box: 128–512 jobs within noise of each other, fewer
    // clearly slower; the ceiling is twice the RPC window (512). Under ±25 % noise
    // per interval the probes misjudge often; a run of cuts must not walk down the
    // flat top and off its edge, and nothing may pass the ceiling.
    let s = Measured(&[(32, 700.0), (64, 1100.0), (128, 1430.0), (256, 1500.0)]);
    let mut effs = Vec::new();
    let mut lowest = usize::MAX;
    for i in 1..=40u64 {
        let mut seed = i;
        let mut c = Controller::new(Jobs::Auto, Bounds::nfs(256));
        let (_, done) = drive_noisy(&mut c, &s, 0.0, 30.0, &mut seed, 0.25);
        let h = c.report().history;
        assert!(h.iter().all(|x| x.1 <= 512), "above the ceiling: {h:?}");
        lowest = lowest.min(h.iter().map(|x| x.1).min().unwrap());
        effs.push(done / (1500.0 * 30.0));
    }
    effs.sort_by(f64::total_cmp);
    assert!(effs[20] >= 0.95 && effs[0] >= 0.9, "{effs:.2?}");
    assert!(lowest >= 64, "walked down to {lowest}");
}

#[test]
fn a_run_of_cuts_is_judged_from_where_it_started() {
    // Each cut of a third loses ~4 %: one is within the 5 % a cut may lose, two in
    // a row are not. Judged step by step, 256 → 170 → 113 would both be kept (and
    // 75 tried next); judged from 256, the second cut is undone.
    let s = Measured(&[(64, 1300.0), (128, 1400.0), (256, 1500.0)]);
    let mut c = Controller::new(
        Jobs::Auto,
        Bounds {
            start: 256,
            max: 256,
            slow_start: false,
        },
    );
    let mut seed = 1;
    drive_noisy(&mut c, &s, 0.0, 5.0, &mut seed, 0.0);
    let h: Vec<usize> = c.report().history.iter().map(|x| x.1).collect();
    assert_eq!(h[..4], [256, 170, 113, 170], "{:?}", c.report().history);
}

#[test]
fn fixed_jobs_never_move() {
    let mut c = Controller::new(Jobs::Fixed(8), Bounds::MOUNT);
    let s = Server {
        latency: 0.01,
        rate: 1e6,
    };
    let mut seed = 1;
    drive(&mut c, &s, 0.0, 5.0, &mut seed);
    assert_eq!(c.jobs(), 8);
    assert_eq!(c.report().history.len(), 1);
}

#[test]
fn never_leaves_its_bounds() {
    let s = Server {
        latency: 1.0,
        rate: 1e9,
    };
    let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
    let mut seed = 5;
    drive(&mut c, &s, 0.0, 120.0, &mut seed);
    assert!(c.jobs() <= MAX_JOBS && c.jobs() >= 1);
}

/// [`Measured`], but `early` times faster for the first `until` seconds: ganesha
/// creating into a directory that is still nearly empty.
struct FastStart {
    curve: Measured,
    early: f64,
    until: f64,
    now: std::cell::Cell<f64>,
}

impl Model for FastStart {
    fn serve(&self, n: usize) -> (f64, f64) {
        let (tput, lat) = self.curve.serve(n);
        if self.now.get() < self.until {
            (tput * self.early, lat / self.early)
        } else {
            (tput, lat)
        }
    }
}

/// Drives `c` against `s` for `secs`, telling the model the time; returns the
/// operations done after `from` seconds.
fn drive_timed(c: &mut Controller, s: &FastStart, secs: f64, from: f64, seed: &mut u64) -> f64 {
    let (mut t, mut done) = (0.0, 0.0);
    while t < secs - 1e-9 {
        s.now.set(t);
        let (t1, d) = drive_noisy(c, s, t, 0.1, seed, 0.1);
        if t >= from {
            done += d;
        }
        t = t1;
    }
    done
}

#[test]
fn a_stale_latency_floor_does_not_walk_jobs_down() {
    // nfs:// on efs-blog at 18:21 (benches/results/sweep-2026-11-23-1821.md): 256 and
    // 512 jobs ~1,290 files/s, 16–128 ~1,000–1,100. The guard's floor came from the
    // first epochs, when the server was faster; from then on the latency was over
    // twice that floor at every job count, each guard cut lost less than 5 % and was
    // kept, and one run walked 256 → 170 → 113 → 170 → 113 → 75 → 50 (6.0 s against
    // 4.3 s). A stale floor may cost one cut, not a walk down.
    const CURVE: &[(usize, f64)] = &[(16, 1000.0), (64, 1100.0), (128, 1150.0), (256, 1290.0)];
    let mut effs = Vec::new();
    for i in 1..=20u64 {
        let mut seed = i;
        let s = FastStart {
            curve: Measured(CURVE),
            early: 2.5,
            until: 1.0,
            now: std::cell::Cell::new(0.0),
        };
        let mut c = Controller::new(Jobs::Auto, Bounds::nfs(256));
        let done = drive_timed(&mut c, &s, 10.0, 1.0, &mut seed);
        let h = c.report().history;
        let lowest = h.iter().map(|x| x.1).min().unwrap();
        assert!(lowest >= 113, "seed {i}: walked down to {lowest}: {h:?}");
        effs.push(done / (1290.0 * 9.0));
    }
    effs.sort_by(f64::total_cmp);
    assert!(effs[0] >= 0.93, "{effs:.3?}");
}

/// Large files: each job writes `size` bytes at up to `per_file` bytes/s, and the
/// server takes `total` bytes/s in all, after `latency` seconds of set-up per file.
struct Large {
    size: f64,
    per_file: f64,
    total: f64,
    latency: f64,
}

impl Large {
    /// (files per second, seconds per file) with `n` in flight.
    fn serve(&self, n: usize) -> (f64, f64) {
        let n = n as f64;
        let bw = (n * self.per_file).min(self.total);
        let files = bw / self.size;
        let per = self.latency + self.size / self.per_file;
        (files.min(n / per), (n / files).max(per))
    }
}

/// Drives `c` for `secs` against `s`, reporting bytes as they are written and each
/// file when it ends (as the engine does). Returns the time reached and the bytes.
fn drive_large(c: &mut Controller, s: &Large, t0: f64, secs: f64, seed: &mut u64) -> (f64, f64) {
    let (dt, mut t, mut total) = (0.1, t0, 0.0);
    let mut files = 0.0;
    while t < t0 + secs - 1e-9 {
        t += dt;
        let noise = noise(seed, 0.05);
        let (rate, lat) = s.serve(c.jobs());
        let bytes = rate * s.size * dt * noise;
        total += bytes;
        files += rate * dt * noise;
        let done = files.floor();
        files -= done;
        c.on_interval(
            Duration::from_secs_f64(t),
            done as u64,
            bytes as u64,
            Duration::from_secs_f64(done * lat),
        );
    }
    (t, total)
}

#[test]
fn follows_small_files_then_large_then_small() {
    // A tree of small files (optimum 40 in flight), then a few huge files (the server
    // takes 200 MiB/s, one file at most 50 MiB/s: 4 in flight fill it), then small
    // files again. Each phase must end near its own best.
    const MIB: f64 = 1024.0 * 1024.0;
    let small = Server {
        latency: 0.002,
        rate: 20_000.0,
    };
    let large = Large {
        size: 512.0 * MIB,
        per_file: 50.0 * MIB,
        total: 200.0 * MIB,
        latency: 0.01,
    };
    for mut seed in 1..=5u64 {
        let mut c = Controller::new(Jobs::Auto, Bounds::MOUNT);
        let (t, _) = drive(&mut c, &small, 0.0, 10.0, &mut seed);
        let (t, _) = drive_large(&mut c, &large, t, 40.0, &mut seed);
        let (t, bytes) = drive_large(&mut c, &large, t, 10.0, &mut seed);
        let h = c.report().history;
        let eff = bytes / (large.total * 10.0);
        assert!(eff >= 0.9, "seed {seed}: large files at {eff:.2}: {h:?}");
        let (t, _) = drive(&mut c, &small, t, 10.0, &mut seed);
        let eff = efficiency(&mut c, &small, t, &mut seed);
        let h = c.report().history;
        assert!(
            eff >= 0.9,
            "seed {seed}: small files again at {eff:.2}: {h:?}"
        );
    }
}
