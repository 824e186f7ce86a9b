// SPDX-License-Identifier: GPL-2.0
//! A twin of CodSpeed's runner 5.0.2 memory executor (src/executor/memory/executor.rs), for the
//! side it shares with its tracker: it starts `codspeed-memtrack track --output DIR/results
//! --ipc-server NAME "source ENV && ..."` as the runner does, accepts the tracker's connection on
//! an ipc-channel one-shot server, sends Ping, Enable and Disable as IpcMessages and reads each
//! IpcResponse, then decodes DIR/results/ROOTPID.MemtrackArtifact.msgpack with the runner's
//! types and crates (serde, rmp-serde, zstd) and checks it against fixtures/README.md's truth
//! for `mapping`.
//!
//! ipc-channel itself is not packaged by Debian, so the server side of its Linux transport is
//! written here from the facts of its source (servo/ipc-channel v0.20.2, src/platform/unix):
//! SOCK_SEQPACKET Unix sockets, the one-shot server bound at TMPDIR/RANDOM/socket, one packet
//! per message made of a native usize byte count and the bincode-1 payload, each channel in the
//! payload a usize index into the descriptors the packet carries as SCM_RIGHTS. The payloads are
//! real bincode of the runner's published types.
//!
//! Usage: twin_ipc window|off CODSPEED_MEMTRACK FIXTURES_DIR WORK_DIR
//! Prints one line per check on stdout and exits 0, or says what failed on stderr and exits 1.

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::{Cursor, Read};
use std::os::unix::io::RawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ---- the runner's published types (crates/memtrack/src/ipc.rs, runner-shared artifacts) ----

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
enum IpcCommand {
    Enable,
    Disable,
    Ping,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
enum IpcResponse {
    Ack,
    Err,
}

/// An IpcSender as ipc-channel serializes it: its index among the packet's descriptors.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
struct ChannelIndex(usize);

/// IpcMessage {command, response_channel: IpcSender<IpcResponse>}.
#[derive(Serialize, Deserialize, Debug)]
struct IpcMessage {
    command: IpcCommand,
    response_channel: ChannelIndex,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
struct MemtrackEvent {
    pid: i32,
    tid: i32,
    timestamp: u64,
    addr: u64,
    #[serde(flatten)]
    kind: MemtrackEventKind,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(tag = "type")]
enum MemtrackEventKind {
    Malloc {
        size: u64,
    },
    Free,
    Realloc {
        #[serde(default)]
        old_addr: Option<u64>,
        size: u64,
    },
    Calloc {
        size: u64,
    },
    AlignedAlloc {
        size: u64,
    },
    Mmap {
        size: u64,
    },
    Munmap {
        size: u64,
    },
    Brk {
        size: u64,
    },
}

// ---- ipc-channel's Linux transport, the server's side -------------------------------------

const MAX_FDS: usize = 64;

fn errno_str(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// poll(fd) for input until deadline; false on timeout.
fn wait_readable(fd: RawFd, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let n = unsafe { libc::poll(&mut p, 1, left.as_millis().min(1000) as i32) };
        if n > 0 {
            return true;
        }
    }
}

struct OneShotServer {
    fd: RawFd,
    name: String,
    dir: String,
}

impl OneShotServer {
    fn new() -> Result<Self, String> {
        let tmp = std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".into());
        let mut template = CString::new(format!("{tmp}/twin-ipc-XXXXXX")).unwrap().into_bytes_with_nul();
        let p = unsafe { libc::mkdtemp(template.as_mut_ptr() as *mut libc::c_char) };
        if p.is_null() {
            return Err(errno_str("mkdtemp"));
        }
        template.pop();
        let dir = String::from_utf8(template).unwrap();
        let name = format!("{dir}/socket");
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
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
    fn accept(&self) -> Result<RawFd, String> {
        if !wait_readable(self.fd, Instant::now() + Duration::from_secs(5)) {
            return Err("the tracker did not connect within 5 s (the runner's timeout)".into());
        }
        let conn = unsafe { libc::accept(self.fd, std::ptr::null_mut(), std::ptr::null_mut()) };
        if conn < 0 {
            return Err(errno_str("accept"));
        }
        let (payload, fds) = recv_packet(conn, Duration::from_secs(5))?;
        unsafe { libc::close(conn) };
        let index: ChannelIndex = bincode::deserialize(&payload).map_err(|e| format!("the tracker's first message: {e}"))?;
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
        libc::iovec { iov_base: &len as *const usize as *mut libc::c_void, iov_len: std::mem::size_of::<usize>() },
        libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() },
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
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut RawFd, fds.len());
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
        libc::iovec { iov_base: &mut len as *mut usize as *mut libc::c_void, iov_len: std::mem::size_of::<usize>() },
        libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() },
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
fn send_raw(sender: RawFd, payload: &[u8]) -> Result<IpcResponse, String> {
    let mut sv = [0; 2];
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) } < 0 {
        return Err(errno_str("socketpair"));
    }
    let sent = send_packet(sender, payload, &[sv[0]]);
    unsafe { libc::close(sv[0]) };
    let answer = sent.and_then(|_| recv_packet(sv[1], Duration::from_secs(10)));
    unsafe { libc::close(sv[1]) };
    let (bytes, fds) = answer?;
    if !fds.is_empty() {
        return Err(format!("an IpcResponse came with {} descriptors", fds.len()));
    }
    bincode::deserialize(&bytes).map_err(|e| format!("an IpcResponse that does not decode: {e}"))
}

fn send_command(sender: RawFd, command: IpcCommand) -> Result<IpcResponse, String> {
    let msg = IpcMessage { command, response_channel: ChannelIndex(0) };
    send_raw(sender, &bincode::serialize(&msg).unwrap()).map_err(|e| format!("{command:?}: {e}"))
}

fn expect_ack(sender: RawFd, command: IpcCommand) -> Result<(), String> {
    match send_command(sender, command)? {
        IpcResponse::Ack => {
            println!("twin_ipc: {command:?} -> Ack");
            Ok(())
        }
        r => Err(format!("{command:?} was answered {r:?}")),
    }
}

// ---- the tracked command's gates (fixtures/mapping.c) ---------------------------------------

fn mkfifo(path: &str) -> Result<(), String> {
    let c = CString::new(path).unwrap();
    if unsafe { libc::mkfifo(c.as_ptr(), 0o666) } != 0 {
        return Err(errno_str(&format!("mkfifo {path}")));
    }
    unsafe { libc::chmod(c.as_ptr(), 0o666) };
    Ok(())
}

/// A line the fixture writes to the READY FIFO, while the tracker runs.
fn read_gate(path: &str, child: &mut Child) -> Result<String, String> {
    let c = CString::new(path).unwrap();
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno_str(path));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut line = Vec::new();
    while !line.ends_with(b"\n") {
        if let Ok(Some(status)) = child.try_wait() {
            unsafe { libc::close(fd) };
            return Err(format!("the tracker ended ({status}) before the fixture's gate"));
        }
        if Instant::now() > deadline {
            unsafe { libc::close(fd) };
            return Err("the fixture did not reach its gate within 60 s".into());
        }
        let mut b = [0u8; 64];
        let n = unsafe { libc::read(fd, b.as_mut_ptr() as *mut libc::c_void, b.len()) };
        if n > 0 {
            line.extend_from_slice(&b[..n as usize]);
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    unsafe { libc::close(fd) };
    Ok(String::from_utf8_lossy(&line).trim().to_string())
}

fn open_gate(path: &str) -> Result<(), String> {
    std::fs::write(path, b"g").map_err(|e| format!("{path}: {e}"))
}

fn wait_child(child: &mut Child, secs: u64) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("the tracker did not end within {secs} s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- the artifact ---------------------------------------------------------------------------

/// The results folder's one MemtrackArtifact, decoded as the runner decodes it; every byte must
/// decode (the runner's stream stops silently at the first event it cannot read).
fn read_artifact(results: &str) -> Result<(String, Vec<MemtrackEvent>), String> {
    let names: Vec<String> = std::fs::read_dir(results)
        .map_err(|e| format!("{results}: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("MemtrackArtifact"))
        .collect();
    if names.len() != 1 {
        return Err(format!("{} MemtrackArtifact files in {results}: {names:?}", names.len()));
    }
    let mut raw = Vec::new();
    std::fs::File::open(format!("{results}/{}", names[0]))
        .and_then(|f| zstd::stream::read::Decoder::new(f)?.read_to_end(&mut raw))
        .map_err(|e| format!("{}: not zstd frames: {e}", names[0]))?;
    let total = raw.len() as u64;
    let mut cur = Cursor::new(raw);
    let mut events = Vec::new();
    while cur.position() < total {
        let mut de = rmp_serde::Deserializer::new(&mut cur);
        match MemtrackEvent::deserialize(&mut de) {
            Ok(e) => events.push(e),
            Err(e) => return Err(format!("an event a 5.0.2 runner cannot decode: {e}")),
        }
    }
    Ok((names[0].clone(), events))
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort();
    v
}

/// fixtures/README.md, "mapping": what the window of one `mapping READY GO` holds.
/// The leaks run before the window and after it are other processes: none of theirs may be in
/// it. bash, the root, may be: on a loaded machine its bookkeeping after forking the fixture can
/// run once the fixture is already past its gate.
fn check_window(all: &[MemtrackEvent], pid: i32, bash: i32, t0: u64, t1: u64) -> Result<(), String> {
    if let Some(e) = all.iter().find(|e| e.pid != pid && e.pid != bash) {
        return Err(format!("an event of pid {} in the window, which only pid {pid} (and bash) fill: {e:?}", e.pid));
    }
    if let Some(e) = all.iter().find(|e| e.timestamp < t0 || e.timestamp > t1) {
        return Err(format!("an event outside the Enable/Disable window [{t0}, {t1}]: {e:?}"));
    }
    println!("twin_ipc: events of bash in the window: {}", all.iter().filter(|e| e.pid == bash).count());
    let events: Vec<MemtrackEvent> = all.iter().copied().filter(|e| e.pid == pid).collect();
    let sizes = |f: &dyn Fn(&MemtrackEventKind) -> Option<u64>| -> Vec<u64> {
        sorted(events.iter().filter_map(|e| f(&e.kind)).collect())
    };
    let mallocs = sizes(&|k| if let MemtrackEventKind::Malloc { size } = k { Some(*size) } else { None });
    let frees = events.iter().filter(|e| e.kind == MemtrackEventKind::Free).count();
    let mmaps = sizes(&|k| if let MemtrackEventKind::Mmap { size } = k { Some(*size) } else { None });
    let munmaps = sizes(&|k| if let MemtrackEventKind::Munmap { size } = k { Some(*size) } else { None });
    let brks: Vec<&MemtrackEvent> = events.iter().filter(|e| matches!(e.kind, MemtrackEventKind::Brk { .. })).collect();
    let want = |what: &str, got: String, truth: String| -> Result<(), String> {
        if got != truth {
            return Err(format!("{what}: {got}, fixtures/README.md says {truth}"));
        }
        println!("twin_ipc: {what}: {got}");
        Ok(())
    };
    want("Malloc sizes", format!("{mallocs:?}"), format!("{:?}", (100..110).collect::<Vec<u64>>()))?;
    want("Free", frees.to_string(), "10".into())?;
    want("Mmap sizes", format!("{mmaps:?}"), "[4096, 65536, 196708]".into())?;
    want("Munmap sizes", format!("{munmaps:?}"), "[4096, 131072, 196708]".into())?;
    want("Brk events", brks.len().to_string(), "2".into())?;
    if brks[0].kind != (MemtrackEventKind::Brk { size: 0 }) || brks[0].addr != brks[1].addr + 65536 {
        return Err(format!("Brk: up by 65536 then back, size 0, as CodSpeed records it: {brks:?}"));
    }
    let total = mallocs.len() + frees + mmaps.len() + munmaps.len() + brks.len();
    want("events of the fixture", events.len().to_string(), total.to_string())
}

fn start_tracker(tracker: &str, results: &str, server: &OneShotServer, command: &str) -> Result<Child, String> {
    Command::new(tracker)
        .args(["track", "--output", results, "--ipc-server", &server.name, command])
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("{tracker}: {e}"))
}

fn run(mode: &str, tracker: &str, fixtures: &str, work: &str) -> Result<(), String> {
    let results = format!("{work}/results");
    // The runner creates results/ itself, so that the tracker does not (executor.rs, run).
    std::fs::create_dir_all(&results).map_err(|e| format!("{results}: {e}"))?;
    let env = format!("{work}/env.sh");
    std::fs::write(&env, "export CODSPEED_RUNNER_MODE=memory\n").map_err(|e| e.to_string())?;
    let (ready, go) = (format!("{work}/ready"), format!("{work}/go"));
    let command = if mode == "off" {
        format!("source {env} && {fixtures}/leaks")
    } else {
        mkfifo(&ready)?;
        mkfifo(&go)?;
        // A command before the window and one after it, in the same bash.
        format!(
            "source {env} && echo $$ > {work}/bash.pid && {fixtures}/leaks && {fixtures}/mapping {ready} {go} && {fixtures}/leaks"
        )
    };
    let server = OneShotServer::new()?;
    let mut child = start_tracker(tracker, &results, &server, &command)?;
    let sender = match server.accept() {
        Ok(fd) => fd,
        Err(e) => {
            let _ = child.kill();
            return Err(e);
        }
    };
    println!("twin_ipc: the tracker connected and sent its IpcSender");
    expect_ack(sender, IpcCommand::Ping)?;
    if mode == "off" {
        let status = wait_child(&mut child, 60)?;
        if !status.success() {
            return Err(format!("the tracker exited {status}"));
        }
        let (_, events) = read_artifact(&results)?;
        if !events.is_empty() {
            return Err(format!("{} events recorded without Enable: {:?}", events.len(), events[0]));
        }
        println!("twin_ipc: no Enable, no event: the artifact decodes to 0 events");
        return Ok(());
    }
    // A command the tracker does not know (variant 3) is answered Err, and serving goes on.
    let unknown = [3u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    match send_raw(sender, &unknown)? {
        IpcResponse::Err => println!("twin_ipc: an unknown command -> Err"),
        r => return Err(format!("an unknown command was answered {r:?}")),
    }
    let line = read_gate(&ready, &mut child)?;
    let pid: i32 = line.strip_prefix("ready ").and_then(|p| p.parse().ok()).ok_or(format!("gate line {line:?}"))?;
    let t0 = now_ns();
    expect_ack(sender, IpcCommand::Enable)?;
    open_gate(&go)?;
    let done = read_gate(&ready, &mut child)?;
    if done != "done" {
        return Err(format!("gate line {done:?}"));
    }
    expect_ack(sender, IpcCommand::Disable)?;
    let t1 = now_ns();
    open_gate(&go)?;
    let status = wait_child(&mut child, 60)?;
    if !status.success() {
        return Err(format!("the tracker exited {status}"));
    }
    let (name, events) = read_artifact(&results)?;
    let bash = std::fs::read_to_string(format!("{work}/bash.pid")).map_err(|e| e.to_string())?;
    if name != format!("{}.MemtrackArtifact.msgpack", bash.trim()) {
        return Err(format!("the artifact is {name}, not the root's ({})", bash.trim()));
    }
    println!("twin_ipc: {name}: {} events, all decoded", events.len());
    check_window(&events, pid, bash.trim().parse().unwrap_or(-1), t0, t1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 || (args[1] != "window" && args[1] != "off") {
        eprintln!("usage: twin_ipc window|off CODSPEED_MEMTRACK FIXTURES_DIR WORK_DIR");
        std::process::exit(2);
    }
    if let Err(e) = run(&args[1], &args[2], &args[3], &args[4]) {
        eprintln!("twin_ipc: {e}");
        std::process::exit(1);
    }
    println!("twin_ipc: ok");
}
