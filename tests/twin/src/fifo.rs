//! The runner's FIFOs, as its RunnerFifo::open makes them (src/executor/shared/fifo.rs):
//! unlink, mkfifo 0700, both ends opened read-write and non-blocking before the integration
//! starts; frames of a u32 little-endian length and a bincode-1 Command.

use crate::fail;
use crate::runner::Command;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;

pub const CTL_FIFO: &str = "/tmp/runner.ctl.fifo";
pub const ACK_FIFO: &str = "/tmp/runner.ack.fifo";

fn create_fifo(path: &str) {
    let _ = fs::remove_file(path);
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: c is a NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o700) } != 0 {
        fail(format!(
            "mkfifo {path}: {}",
            std::io::Error::last_os_error()
        ));
    }
}

fn open_rdwr(path: &str) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap_or_else(|e| fail(format!("open {path}: {e}")))
}

pub struct RunnerFifo {
    ctl: Option<File>,
    ack: Option<File>,
    pending: Vec<u8>,
}

impl RunnerFifo {
    pub fn open() -> Self {
        create_fifo(CTL_FIFO);
        create_fifo(ACK_FIFO);
        let ack = open_rdwr(ACK_FIFO);
        let ctl = open_rdwr(CTL_FIFO);
        RunnerFifo {
            ctl: Some(ctl),
            ack: Some(ack),
            pending: Vec::new(),
        }
    }

    /// The next whole frame within timeout_ms, decoded with the runner's types.
    pub fn recv(&mut self, timeout_ms: i32) -> Option<Command> {
        loop {
            if self.pending.len() >= 4 {
                let len = u32::from_le_bytes(self.pending[..4].try_into().unwrap()) as usize;
                if self.pending.len() >= 4 + len {
                    let bytes: Vec<u8> = self.pending.drain(..4 + len).skip(4).collect();
                    return Some(bincode::deserialize(&bytes).unwrap_or_else(|e| {
                        fail(format!("a frame that is no Command ({e}): {bytes:?}"))
                    }));
                }
            }
            let ctl = self.ctl.as_mut()?;
            let mut p = libc::pollfd {
                fd: ctl.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut p, 1, timeout_ms) } <= 0 {
                return None;
            }
            let mut buf = [0u8; 4096];
            match ctl.read(&mut buf) {
                Ok(n) if n > 0 => self.pending.extend_from_slice(&buf[..n]),
                _ => return None,
            }
        }
    }

    pub fn send(&mut self, cmd: &Command) {
        let bytes = bincode::serialize(cmd).unwrap();
        if let Some(ack) = self.ack.as_mut() {
            let mut frame = (bytes.len() as u32).to_le_bytes().to_vec();
            frame.extend_from_slice(&bytes);
            ack.write_all(&frame)
                .unwrap_or_else(|e| fail(format!("write the answer: {e}")));
        }
    }

    pub fn close(&mut self) {
        self.ctl = None;
        self.ack = None;
    }

    /// Bytes of answers still in the answer FIFO: ones exec-harness has not read back.
    pub fn unread_answers(&self) -> i32 {
        let mut n: libc::c_int = 0;
        if let Some(ack) = &self.ack {
            // SAFETY: FIONREAD stores an int into n.
            unsafe { libc::ioctl(ack.as_raw_fd(), libc::FIONREAD, &mut n) };
        }
        n
    }
}
