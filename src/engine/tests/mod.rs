//! Tests of the engine as a whole, kept apart from the production files: whole runs
//! against a recording fake destination ([`recorder`]), and starting the workers.

mod done;
mod links;
mod order;
mod panic;
pub(super) mod recorder;

use std::io;

use super::spawn_up_to;

#[test]
fn refused_threads_mean_fewer_workers() {
    let mut allowed = 3;
    let (started, err) = spawn_up_to(8, || {
        if allowed == 0 {
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        allowed -= 1;
        Ok(())
    });
    assert_eq!(started, 3);
    assert_eq!(err.unwrap().raw_os_error(), Some(libc::EAGAIN));
    let (started, err) = spawn_up_to(4, || Ok(()));
    assert_eq!((started, err.is_none()), (4, true));
}
