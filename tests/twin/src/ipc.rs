//! The server side of ipc-channel 0.20's Linux transport, as the runner uses it to reach its
//! tracker (src/executor/memory/executor.rs: IpcOneShotServer, MemtrackIpcClient).
//!
//! ipc-channel itself is not packaged by Debian, so this is written from the facts of its
//! source (servo/ipc-channel v0.20.2, src/platform/unix): SOCK_SEQPACKET Unix sockets, the
//! one-shot server bound at TMPDIR/RANDOM/socket, one packet per message made of a native usize
//! byte count and the bincode-1 payload, each channel in the payload a usize index into the
//! descriptors the packet carries as SCM_RIGHTS. The payloads are real bincode of the runner's
//! published types (runner.rs).

use crate::runner::{ChannelIndex, IpcCommand, IpcMessage, IpcResponse};
use std::ffi::CString;
use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

const MAX_FDS: usize = 64;

pub fn errno_str(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// poll(fd) for input until deadline; false on timeout.
pub fn wait_readable(fd: RawFd, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let n = unsafe { libc::poll(&mut p, 1, left.as_millis().min(1000) as i32) };
        if n > 0 {
            return true;
        }
    }
}

pub struct OneShotServer {
    fd: RawFd,
    pub name: String,
    dir: String,
}

impl OneShotServer {
    pub fn new() -> Result<Self, String> {
        let tmp = std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".into());
        let mut template = CString::new(format!("{tmp}/twin-ipc-XXXXXX"))
            .unwrap()
            .into_bytes_with_nul();
        let p = unsafe { libc::mkdtemp(template.as_mut_ptr() as *mut libc::c_char) };
        if p.is_null() {
            return Err(errno_str("mkdtemp"));
        }
        template.pop();
        let dir = String::from_utf8(template).unwrap();
        let name = format!("{dir}/socket");
        let fd =
            unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(errno_str("socket"));
        }
        let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (i, b) in name.bytes().enumerate() {
            sa.sun_path[i] = b as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        if unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len) } != 0 {
            return Err(errno_str("bind"));
        }
        if unsafe { libc::listen(fd, 10) } != 0 {
            return Err(errno_str("listen"));
        }
        Ok(OneShotServer { fd, name, dir })
    }

    /// The runner waits 5 s for the connection (executor.rs, handle_fifo), then one message:
    /// the tracker's IpcSender<IpcMessage>.
    pub fn accept(&self) -> Result<RawFd, String> {
        if !wait_readable(self.fd, Instant::now() + Duration::from_secs(5)) {
            return Err("the tracker did not connect within 5 s (the runner's timeout)".into());
        }
        let conn = unsafe { libc::accept(self.fd, std::ptr::null_mut(), std::ptr::null_mut()) };
        if conn < 0 {
            return Err(errno_str("accept"));
        }
        let (payload, fds) = recv_packet(conn, Duration::from_secs(5))?;
        unsafe { libc::close(conn) };
        let index: ChannelIndex = bincode::deserialize(&payload)
            .map_err(|e| format!("the tracker's first message: {e}"))?;
        if payload.len() != 8 || fds.len() != 1 || index.0 != 0 {
            return Err(format!(
                "the tracker's first message is not one IpcSender: {} bytes, {} descriptors, index {}",
                payload.len(),
                fds.len(),
                index.0
            ));
        }
        Ok(fds[0])
    }
}

impl Drop for OneShotServer {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
        let _ = std::fs::remove_file(&self.name);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn send_packet(fd: RawFd, payload: &[u8], fds: &[RawFd]) -> Result<(), String> {
    let len: usize = payload.len();
    let mut iov = [
        libc::iovec {
            iov_base: &len as *const usize as *mut libc::c_void,
            iov_len: std::mem::size_of::<usize>(),
        },
        libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        },
    ];
    let space = unsafe { libc::CMSG_SPACE((fds.len() * 4) as u32) } as usize;
    let mut ctl = vec![0u8; space.max(1)];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = 2;
    if !fds.is_empty() {
        msg.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space;
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN((fds.len() * 4) as u32) as usize;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c) as *mut RawFd,
                fds.len(),
            );
        }
    }
    if unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(errno_str("sendmsg"));
    }
    Ok(())
}

/// One packet: its payload, which must be whole (CodSpeed's messages are never fragmented), and
/// the descriptors it carried.
fn recv_packet(fd: RawFd, timeout: Duration) -> Result<(Vec<u8>, Vec<RawFd>), String> {
    if !wait_readable(fd, Instant::now() + timeout) {
        return Err(format!("no message within {} s", timeout.as_secs()));
    }
    let mut len: usize = 0;
    let mut buf = vec![0u8; 65536];
    let mut iov = [
        libc::iovec {
            iov_base: &mut len as *mut usize as *mut libc::c_void,
            iov_len: std::mem::size_of::<usize>(),
        },
        libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        },
    ];
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * 4) as u32) } as usize;
    let mut ctl = vec![0u8; space];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = 2;
    msg.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = space;
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(errno_str("recvmsg"));
    }
    if n == 0 {
        return Err("the channel was closed".into());
    }
    let mut fds = Vec::new();
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
                let data = libc::CMSG_DATA(c) as *const RawFd;
                for i in 0..count {
                    fds.push(*data.add(i));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let got = n as usize - std::mem::size_of::<usize>();
    if len != got {
        return Err(format!("a packet announces {len} bytes but holds {got}"));
    }
    buf.truncate(got);
    Ok((buf, fds))
}

/// MemtrackIpcClient::send_command: a response channel of its own, the message, the answer.
pub fn send_raw(sender: RawFd, payload: &[u8]) -> Result<IpcResponse, String> {
    let mut sv = [0; 2];
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    } < 0
    {
        return Err(errno_str("socketpair"));
    }
    let sent = send_packet(sender, payload, &[sv[0]]);
    unsafe { libc::close(sv[0]) };
    let answer = sent.and_then(|_| recv_packet(sv[1], Duration::from_secs(10)));
    unsafe { libc::close(sv[1]) };
    let (bytes, fds) = answer?;
    if !fds.is_empty() {
        return Err(format!(
            "an IpcResponse came with {} descriptors",
            fds.len()
        ));
    }
    bincode::deserialize(&bytes).map_err(|e| format!("an IpcResponse that does not decode: {e}"))
}

pub fn send_command(sender: RawFd, command: IpcCommand) -> Result<IpcResponse, String> {
    let msg = IpcMessage {
        command,
        response_channel: ChannelIndex(0),
    };
    send_raw(sender, &bincode::serialize(&msg).unwrap()).map_err(|e| format!("{command:?}: {e}"))
}
