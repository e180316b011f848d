//! What rsync's options mean, decided without I/O: which entries a rule takes or
//! leaves, which symlinks are followed, what a backup is called, which basis copy
//! matches, whose names map to whom. The engine carries each out in its module of the
//! same name (`engine::follow` does what [`follow`] decides), so these stay plain
//! functions of their inputs, tested without a destination.

pub mod backup;
pub mod bwlimit;
pub mod chmod;
pub mod fake_super;
pub mod filter;
pub mod follow;
pub mod idmap;
pub mod keep;
pub mod relative;
pub mod stop;
pub mod temp;
pub mod trust;
pub mod xattrs;
