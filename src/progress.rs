//! The progress bar: files and bytes done of those found so far, rate and ETA.
//!
//! The total grows while the walk runs ahead of the copy, so the ETA firms up as the
//! walk finishes; that is the honest answer when the tree size is not known upfront.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::Stats;

/// A running progress display; stops when dropped.
pub struct Progress {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar on stderr if wanted and stderr is a terminal.
    pub fn start(wanted: bool, stats: Arc<Stats>) -> Option<Progress> {
        if !wanted || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(5));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {pos}/{len} files  {msg}  {per_sec}  ETA {eta}",
            )
            .expect("valid template"),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (b, st) = (bar.clone(), stop.clone());
        let ticker = std::thread::Builder::new()
            .name("nfsync-progress".into())
            .spawn(move || {
                while !st.load(Relaxed) {
                    let done = stats.files_copied.load(Relaxed)
                        + stats.links_created.load(Relaxed)
                        + stats.files_skipped.load(Relaxed)
                        + stats.attrs_updated.load(Relaxed)
                        + stats.errors.load(Relaxed);
                    b.set_length(stats.files_scanned.load(Relaxed));
                    b.set_position(done);
                    b.set_message(format!(
                        "{} of {}",
                        HumanBytes(stats.bytes_copied.load(Relaxed)),
                        HumanBytes(stats.bytes_scanned.load(Relaxed))
                    ));
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
            .ok();
        Some(Progress { bar, stop, ticker })
    }

    /// The bar, so messages can be printed above it.
    pub fn bar(&self) -> ProgressBar {
        self.bar.clone()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}
