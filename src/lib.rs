//! nfsync: sync directory trees onto network filesystems with many operations in flight.
//!
//! Data flows one way: [`walk`] lists the source, [`plan`] compares each directory with
//! the destination and decides what to do, [`engine`] runs those actions on many
//! workers through a [`dest::Destination`], and [`report`] adds up what happened.

pub mod cli;
pub mod config;
pub mod dest;
pub mod engine;
pub mod exit;
pub mod filter;
pub mod meta;
pub mod nfs;
pub mod plan;
pub mod progress;
pub mod report;
pub mod temp;
pub mod tune;
pub mod walk;
