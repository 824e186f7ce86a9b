//! What the runner twins share: the runner's published types, its IPC transport, and the
//! memory artifact as it reads it.

pub mod artifact;
pub mod fifo;
pub mod ipc;
pub mod runner;

/// The twin's verdict when a check fails: its last line, and exit status 1.
pub fn fail(msg: String) -> ! {
    println!("twin: FAIL: {msg}");
    std::process::exit(1);
}
