// SPDX-License-Identifier: GPL-2.0
//! A twin of CodSpeed's runner 5.0.2 memory executor (src/executor/memory/executor.rs), for the
//! side it shares with its tracker: it starts `codspeed-memtrack track --output DIR/results
//! --ipc-server NAME "source ENV && ..."` as the runner does, accepts the tracker's connection on
//! an ipc-channel one-shot server, sends Ping, Enable and Disable as IpcMessages and reads each
//! IpcResponse, then decodes DIR/results/ROOTPID.MemtrackArtifact.msgpack with the runner's
//! types and crates (serde, rmp-serde, zstd) and checks it against fixtures/README.md's truth
//! for `mapping`.
//!
//! The runner's types and its side of ipc-channel are the library's (src/runner.rs, src/ipc.rs).
//!
//! Usage: twin_ipc window|off CODSPEED_MEMTRACK FIXTURES_DIR WORK_DIR
//! Prints one line per check on stdout and exits 0, or says what failed on stderr and exits 1.

use runner_twin::artifact::read_artifact;
use runner_twin::ipc::{errno_str, send_command, send_raw, OneShotServer};
use runner_twin::runner::{
    monotonic_ns, IpcCommand, IpcResponse, MemtrackEvent, MemtrackEventKind,
};
use std::ffi::CString;
use std::os::unix::io::RawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(errno_str(path));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut line = Vec::new();
    while !line.ends_with(b"\n") {
        if let Ok(Some(status)) = child.try_wait() {
            unsafe { libc::close(fd) };
            return Err(format!(
                "the tracker ended ({status}) before the fixture's gate"
            ));
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

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort();
    v
}

/// fixtures/README.md, "mapping": what the window of one `mapping READY GO` holds.
/// The leaks run before the window and after it are other processes: none of theirs may be in
/// it. bash, the root, may be: on a loaded machine its bookkeeping after forking the fixture can
/// run once the fixture is already past its gate.
fn check_window(
    all: &[MemtrackEvent],
    pid: i32,
    bash: i32,
    t0: u64,
    t1: u64,
) -> Result<(), String> {
    if let Some(e) = all.iter().find(|e| e.pid != pid && e.pid != bash) {
        return Err(format!(
            "an event of pid {} in the window, which only pid {pid} (and bash) fill: {e:?}",
            e.pid
        ));
    }
    if let Some(e) = all.iter().find(|e| e.timestamp < t0 || e.timestamp > t1) {
        return Err(format!(
            "an event outside the Enable/Disable window [{t0}, {t1}]: {e:?}"
        ));
    }
    println!(
        "twin_ipc: events of bash in the window: {}",
        all.iter().filter(|e| e.pid == bash).count()
    );
    let events: Vec<MemtrackEvent> = all.iter().copied().filter(|e| e.pid == pid).collect();
    let sizes = |f: &dyn Fn(&MemtrackEventKind) -> Option<u64>| -> Vec<u64> {
        sorted(events.iter().filter_map(|e| f(&e.kind)).collect())
    };
    let mallocs = sizes(&|k| {
        if let MemtrackEventKind::Malloc { size } = k {
            Some(*size)
        } else {
            None
        }
    });
    let frees = events
        .iter()
        .filter(|e| e.kind == MemtrackEventKind::Free)
        .count();
    let mmaps = sizes(&|k| {
        if let MemtrackEventKind::Mmap { size } = k {
            Some(*size)
        } else {
            None
        }
    });
    let munmaps = sizes(&|k| {
        if let MemtrackEventKind::Munmap { size } = k {
            Some(*size)
        } else {
            None
        }
    });
    let brks: Vec<&MemtrackEvent> = events
        .iter()
        .filter(|e| matches!(e.kind, MemtrackEventKind::Brk { .. }))
        .collect();
    let want = |what: &str, got: String, truth: String| -> Result<(), String> {
        if got != truth {
            return Err(format!("{what}: {got}, fixtures/README.md says {truth}"));
        }
        println!("twin_ipc: {what}: {got}");
        Ok(())
    };
    want(
        "Malloc sizes",
        format!("{mallocs:?}"),
        format!("{:?}", (100..110).collect::<Vec<u64>>()),
    )?;
    want("Free", frees.to_string(), "10".into())?;
    want(
        "Mmap sizes",
        format!("{mmaps:?}"),
        "[4096, 65536, 196708]".into(),
    )?;
    want(
        "Munmap sizes",
        format!("{munmaps:?}"),
        "[4096, 131072, 196708]".into(),
    )?;
    want("Brk events", brks.len().to_string(), "2".into())?;
    if brks[0].kind != (MemtrackEventKind::Brk { size: 0 }) || brks[0].addr != brks[1].addr + 65536
    {
        return Err(format!(
            "Brk: up by 65536 then back, size 0, as CodSpeed records it: {brks:?}"
        ));
    }
    let total = mallocs.len() + frees + mmaps.len() + munmaps.len() + brks.len();
    want(
        "events of the fixture",
        events.len().to_string(),
        total.to_string(),
    )
}

fn start_tracker(
    tracker: &str,
    results: &str,
    server: &OneShotServer,
    command: &str,
) -> Result<Child, String> {
    Command::new(tracker)
        .args([
            "track",
            "--output",
            results,
            "--ipc-server",
            &server.name,
            command,
        ])
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
            return Err(format!(
                "{} events recorded without Enable: {:?}",
                events.len(),
                events[0]
            ));
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
    let pid: i32 = line
        .strip_prefix("ready ")
        .and_then(|p| p.parse().ok())
        .ok_or(format!("gate line {line:?}"))?;
    let t0 = monotonic_ns();
    expect_ack(sender, IpcCommand::Enable)?;
    open_gate(&go)?;
    let done = read_gate(&ready, &mut child)?;
    if done != "done" {
        return Err(format!("gate line {done:?}"));
    }
    expect_ack(sender, IpcCommand::Disable)?;
    let t1 = monotonic_ns();
    open_gate(&go)?;
    let status = wait_child(&mut child, 60)?;
    if !status.success() {
        return Err(format!("the tracker exited {status}"));
    }
    let (name, events) = read_artifact(&results)?;
    let bash = std::fs::read_to_string(format!("{work}/bash.pid")).map_err(|e| e.to_string())?;
    if name != format!("{}.MemtrackArtifact.msgpack", bash.trim()) {
        return Err(format!(
            "the artifact is {name}, not the root's ({})",
            bash.trim()
        ));
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
