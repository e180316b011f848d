//! Every shared scenario the in-process NFSv3 server can hold, each against a server of
//! its own that serves a local directory ([`DirFs`]), read back like ganesha's export.
//! The server has no LINK and no MKNOD, so the scenarios that need hard links or special
//! files are left out. It runs as the test process: other users than root get the
//! NFS-path scenarios too, all but those that need a server acting as root.

use std::path::PathBuf;

use crate::scenarios::scenario_tests;
use crate::support::dirfs::DirFs;
use crate::support::inproc::Server;
use crate::support::{Scratch, Target, root_or_skip};

/// A destination on a fresh in-process server.
struct InProcTarget {
    server: Server,
    export: PathBuf,
    _dir: Scratch,
}

impl InProcTarget {
    /// A target whose server acts as root; `None` (and a line saying so) when the tests
    /// run as another user.
    fn as_root() -> Option<InProcTarget> {
        root_or_skip("in-process server scenarios with read-only directories")
            .then(InProcTarget::new)
    }

    fn new() -> InProcTarget {
        let dir = Scratch::new();
        let export = dir.join("export");
        let server = Server::start(None, DirFs::new(&export));
        InProcTarget {
            server,
            export,
            _dir: dir,
        }
    }
}

impl Target for InProcTarget {
    fn dest_arg(&self, sub: &str) -> String {
        self.server.url(&format!("/{sub}"))
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.export.join(sub)
    }

    fn clamps_times(&self) -> bool {
        true
    }
}

scenario_tests!(files, Some(InProcTarget::new()));
scenario_tests!(symlinks, Some(InProcTarget::new()));
scenario_tests!(read_only_dirs, InProcTarget::as_root());
scenario_tests!(owners, Some(InProcTarget::new()));
scenario_tests!(wide_times, Some(InProcTarget::new()));
