//! The end of a `-H` run that changed a group: every name is made to hold one object
//! again (the rules are in the parent module's doc, "Linking follows names, then the
//! group is settled").

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{LinkGroup, Name, SETTLE_ROUNDS, SETTLE_THREADS, Settled};
use crate::dest::{AttrSet, Destination};
use crate::engine::race::is_race_or_gone;
use crate::engine::{DirNode, Engine};
use crate::meta::{Kind, Meta};
use crate::report::Stats;

impl<D: Destination> Engine<'_, D> {
    /// At the end of the walk: every group that met another writer is checked whole
    /// and made one object again (see the module's doc), and the directories this
    /// changed get their mtimes back.
    pub(in crate::engine) fn settle_hard_links(&self) {
        if self.cfg.dry_run || self.sched.stopped() {
            return;
        }
        let groups: Vec<Settled<D>> = {
            let mut links = self.links.0.lock().unwrap();
            links
                .drain()
                .filter_map(|(_, g)| match g {
                    LinkGroup::Done(g) if g.ok && g.check && g.names.len() > 1 => Some(g),
                    _ => None,
                })
                .collect()
        };
        // Groups are independent: settled by several threads, as the walk was, so
        // a large DEST over NFS is not checked one round trip at a time.
        let next = AtomicUsize::new(0);
        let changed = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..SETTLE_THREADS.min(groups.len()) {
                s.spawn(|| {
                    while let Some(g) = groups.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if self.sched.stopped() {
                            return;
                        }
                        let names = self.settle_group(g);
                        changed.lock().unwrap().extend(names);
                    }
                });
            }
        });
        let mut touched: Vec<Arc<DirNode<D>>> = Vec::new();
        let mut seen = HashSet::new();
        for n in changed.into_inner().unwrap() {
            if seen.insert(Arc::as_ptr(&n.parent)) {
                touched.push(n.parent);
            }
        }
        let times = self.cfg.times && !self.cfg.omit_dir_times && self.cfg.shard.is_none();
        if !times {
            return;
        }
        for node in touched {
            if let (Some(dir), Some(given)) = (&node.dir, self.dir_given(&node))
                && let Err(e) = self.dest.set_dir_attrs(dir, &given, AttrSet::MTIME)
            {
                self.dest_error(&node.rel, e);
            }
        }
    }

    /// Makes every name of `g` hold one object: the complete copy with the lowest
    /// (dev, inode). Returns the names it changed.
    fn settle_group(&self, g: &Settled<D>) -> Vec<Name<D>> {
        let mut changed = Vec::new();
        for round in 0..SETTLE_ROUNDS {
            if round > 0 {
                // Another run is still at this group: give it a moment.
                std::thread::sleep(Duration::from_millis(5 << round.min(6)));
            }
            let mut held = Vec::with_capacity(g.names.len());
            for n in &g.names {
                let Some(dir) = &n.parent.dir else {
                    return changed;
                };
                match self.dest.stat(dir, &n.name) {
                    Ok(m) => held.push(m),
                    Err(e) => {
                        self.dest_error(&n.rel(), e);
                        return changed;
                    }
                }
            }
            let complete = |m: &Meta| {
                m.kind == Kind::File
                    && m.size == g.src.size
                    && (!self.cfg.times || g.src.mtime.matches(m.mtime, self.rules.modify_window))
            };
            let target = held
                .iter()
                .enumerate()
                .filter_map(|(i, m)| m.filter(complete).map(|m| ((m.dev, m.ino), i)))
                .min();
            let Some((id, at)) = target else {
                continue;
            };
            if held.iter().all(|m| m.is_some_and(|m| (m.dev, m.ino) == id)) {
                return changed;
            }
            let to = &g.names[at];
            let Some(tdir) = &to.parent.dir else {
                return changed;
            };
            for (n, m) in g.names.iter().zip(&held) {
                if m.is_some_and(|m| (m.dev, m.ino) == id) {
                    continue;
                }
                let Some(dir) = &n.parent.dir else { continue };
                let r = match m {
                    // A directory or a non-file: another writer's, not ours to replace.
                    Some(m) if m.kind == Kind::Dir => continue,
                    Some(_) => self.link_over(dir, &n.name, tdir, &to.name),
                    None => self.dest.hard_link_current(dir, &n.name, tdir, &to.name),
                };
                // Its directory changed even when the link did not take.
                changed.push(n.clone());
                match r {
                    Ok(()) => {}
                    // Another writer at the name or at the target: the next round sees.
                    Err(e) if is_race_or_gone(&e) => {}
                    Err(e) => {
                        self.dest_error(&n.rel(), e);
                        return changed;
                    }
                }
            }
        }
        Stats::bump(&self.stats.errors);
        self.out.error(
            &self.dest_path(&g.leader.rel()),
            "hard links not settled: other writers kept changing its names",
        );
        changed
    }
}
