// SPDX-License-Identifier: GPL-2.0
//! The runner twin turned around, for `memtrack bench` (docs/BENCH.md), which plays CodSpeed's
//! runner 5.0.2 in memory mode: this twin plays an integration on the other side of the runner's
//! FIFOs. It sends the frames an integration sends (instrument-hooks: SetVersion,
//! GetIntegrationMode, SetIntegration, then per benchmark StartProfiler, StopProfiler, the
//! round's AddMarker RoundStart and RoundEnd, as add_benchmark_timestamps sends them, and
//! CurrentBenchmark), and frames the runner answers Err, and decodes each of memtrack's replies
//! with the runner's own types (src/runner.rs, declared as crates/runner-shared/src/fifo.rs
//! declares them), checking it against what the runner's memory executor answers
//! (src/executor/memory/executor.rs, src/executor/shared/fifo.rs). Between each benchmark's
//! StartProfiler and StopProfiler it allocates a known set of blocks and frees them, and nothing
//! else: its frames are encoded beforehand and its replies read into the stack; the round's
//! timestamps (CLOCK_MONOTONIC, instrument-hooks' clock) are taken there too, around the blocks.
//! With `--sent FILE` it writes the commands it sent (JSON, the runner's Command) into FILE.
//!
//! With `--refused`, it also sends frames the runner answers Err ("Unhandled FIFO command": a
//! PingProfiler, a runner's own Ack), which memtrack bench answers Err too and counts as refused
//! (its exit status is then 1).
//!
//! `profile DIR SENT` decodes the profile folder `memtrack bench -o DIR/` left, as the runner's
//! memory executor and backend read it: results/ExecutionTimestamps.msgpack (rmp-serde, the
//! runner's ExecutionTimestamps) and results/ROOTPID.MemtrackArtifact.msgpack (zstd frames of
//! the runner's MemtrackEvent). It checks ExecutionTimestamps against what the runner's
//! handle_fifo_messages notes of the commands SENT (the client's `--sent` file): its SampleStart
//! and SampleEnd at StartProfiler and StopProfiler, each AddMarker's marker as it came, in the
//! order sent, every CurrentBenchmark's URI; that the runner's types encode it back to the same
//! bytes; that each round lies in its sample and every event in a sample.
//!
//! Usage: twin_integration client [--refused] [--sent FILE] | profile DIR SENT
//! Prints `twin: ok: ...` (exit 0) or `twin: FAIL: ...` (exit 1) as its last line.

use runner_twin::artifact::read_artifact;
use runner_twin::fail;
use runner_twin::fifo::{ACK_FIFO, CTL_FIFO};
use runner_twin::runner::{
    monotonic_ns, Command, ExecutionTimestamps, IntegrationMode, MarkerType, MemtrackEventKind,
};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// A reply must come within this (the runner answers at once; memtrack bench within a second).
const REPLY_MS: i32 = 5000;

/// The benchmarks: a name, then the sizes of the blocks allocated in the window, all freed in it.
const BENCHMARKS: &[(&str, &[usize])] = &[
    ("alloc_3x4096", &[4096, 4096, 4096]),
    ("alloc_100000", &[100_000]),
];

struct Fifos {
    ctl: File,
    ack: File,
}

/// instrument-hooks' side: the control FIFO written, the answer FIFO read.
fn open_fifos() -> Fifos {
    let open = |path: &str| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| fail(format!("open {path}: {e} (is memtrack bench serving?)")))
    };
    Fifos {
        ctl: open(CTL_FIFO),
        ack: open(ACK_FIFO),
    }
}

/// A frame: a u32 little-endian length and the bincode-1 Command.
fn encode(cmd: &Command) -> Vec<u8> {
    let body = bincode::serialize(cmd).unwrap();
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// Exactly buf.len() bytes of the answer FIFO, each wait bounded.
fn read_exact_bounded(ack: &mut File, buf: &mut [u8]) {
    let mut got = 0;
    while got < buf.len() {
        let mut p = libc::pollfd {
            fd: ack.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, REPLY_MS) } <= 0 {
            fail(format!("no reply within {REPLY_MS} ms"));
        }
        match ack.read(&mut buf[got..]) {
            Ok(n) if n > 0 => got += n,
            other => fail(format!("the answer FIFO: {other:?}")),
        }
    }
}

/// Send a frame encoded beforehand and decode the reply with the runner's types, allocating
/// nothing for a reply without a string (what a window's frames get).
fn exchange(f: &mut Fifos, frame: &[u8]) -> Command {
    f.ctl
        .write_all(frame)
        .unwrap_or_else(|e| fail(format!("write a frame: {e}")));
    let mut len = [0u8; 4];
    read_exact_bounded(&mut f.ack, &mut len);
    let n = u32::from_le_bytes(len) as usize;
    let mut body = [0u8; 256];
    if n > body.len() {
        fail(format!("a reply of {n} bytes"));
    }
    read_exact_bounded(&mut f.ack, &mut body[..n]);
    bincode::deserialize(&body[..n]).unwrap_or_else(|e| {
        fail(format!(
            "a reply that is no Command ({e}): {:?}",
            &body[..n]
        ))
    })
}

/// What runner 5.0.2 answers in memory mode: its executor's on_cmd, then the shared handler.
fn runner_answer(cmd: &Command) -> Command {
    match cmd {
        Command::GetIntegrationMode => Command::IntegrationModeResponse(IntegrationMode::Analysis),
        Command::SetVersion(2)
        | Command::SetIntegration { .. }
        | Command::StartProfiler
        | Command::StopProfiler
        | Command::CurrentBenchmark { .. }
        | Command::AddMarker { .. } => Command::Ack,
        _ => Command::Err,
    }
}

struct Log {
    lines: Vec<String>,
    sent: Vec<Command>,
}

impl Log {
    fn check(&mut self, sent: &Command, got: Command) {
        let want = runner_answer(sent);
        if got != want {
            fail(format!(
                "frame {}: {sent:?} answered {got:?}, the runner answers {want:?}",
                self.lines.len()
            ));
        }
        self.lines
            .push(format!("frame {}: {sent:?} -> {got:?}", self.lines.len()));
        self.sent.push(sent.clone());
    }

    fn send(&mut self, f: &mut Fifos, cmd: Command) {
        let got = exchange(f, &encode(&cmd));
        self.check(&cmd, got);
    }
}

/// Reads of the blocks' bytes the compiler cannot drop, so that their allocations stay.
fn touch(blocks: &[Vec<u8>]) -> usize {
    blocks
        .iter()
        // SAFETY: a block's pointer is valid for one byte when its capacity is not 0.
        .map(|b| unsafe { std::ptr::read_volatile(b.as_ptr()) } as usize + b.capacity())
        .sum()
}

/// One benchmark: its allocations between StartProfiler and StopProfiler, then the round's
/// markers and its name.
fn benchmark(f: &mut Fifos, log: &mut Log, name: &str, sizes: &[usize]) -> usize {
    let (start, stop) = (Command::StartProfiler, Command::StopProfiler);
    let (start_frame, stop_frame) = (encode(&start), encode(&stop));
    let mut blocks: Vec<Vec<u8>> = Vec::with_capacity(sizes.len());
    let pid = std::process::id() as i32;

    let got_start = exchange(f, &start_frame);
    let round_start = monotonic_ns();
    for &n in sizes {
        let mut b = Vec::<u8>::with_capacity(n);
        b.push(1);
        blocks.push(b);
    }
    let seen = touch(&blocks);
    for b in blocks.iter_mut() {
        *b = Vec::new(); // freed inside the window
    }
    let round_end = monotonic_ns();
    let got_stop = exchange(f, &stop_frame);
    log.check(&start, got_start);
    log.check(&stop, got_stop);
    for marker in [
        MarkerType::RoundStart(round_start),
        MarkerType::RoundEnd(round_end),
    ] {
        log.send(f, Command::AddMarker { pid, marker });
    }
    log.send(
        f,
        Command::CurrentBenchmark {
            pid,
            uri: format!("twin_integration::{name}"),
        },
    );
    seen
}

fn client(refused: bool, sent: Option<&str>) -> String {
    let mut f = open_fifos();
    let mut log = Log {
        lines: Vec::new(),
        sent: Vec::new(),
    };
    log.send(&mut f, Command::SetVersion(2));
    log.send(&mut f, Command::GetIntegrationMode);
    log.send(
        &mut f,
        Command::SetIntegration {
            name: "codspeed-rust".into(),
            version: "4.2.0".into(),
        },
    );
    // Frames the runner answers Err ("Unhandled FIFO command"): a ping, a runner's own answer.
    if refused {
        log.send(&mut f, Command::PingProfiler);
        log.send(&mut f, Command::Ack);
    }
    log.send(
        &mut f,
        Command::AddMarker {
            pid: std::process::id() as i32,
            marker: MarkerType::SampleStart(1),
        },
    );
    let mut bytes = 0;
    for (name, sizes) in BENCHMARKS {
        bytes += benchmark(&mut f, &mut log, name, sizes);
    }
    for l in &log.lines {
        println!("twin: {l}");
    }
    if let Some(path) = sent {
        let json = serde_json::to_vec(&log.sent).unwrap();
        std::fs::write(path, json).unwrap_or_else(|e| fail(format!("{path}: {e}")));
    }
    format!(
        "{} frames, {} benchmarks, {bytes} bytes touched",
        log.lines.len(),
        BENCHMARKS.len()
    )
}

/// A marker of ExecutionTimestamps as the runner notes it: its own, on its clock (the variant
/// known, not the time), or an AddMarker's, exactly as it came.
enum Expected {
    Runner(MarkerType),
    Sent(MarkerType),
}

/// What handle_fifo_messages notes of the commands sent, in their order: its benchmark_started
/// pairs StartProfiler and StopProfiler, an AddMarker's marker is pushed as it is.
fn expected_markers(sent: &[Command]) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut started = false;
    for c in sent {
        match c {
            Command::StartProfiler if !started => {
                started = true;
                out.push(Expected::Runner(MarkerType::SampleStart(0)));
            }
            Command::StopProfiler if started => {
                started = false;
                out.push(Expected::Runner(MarkerType::SampleEnd(0)));
            }
            Command::AddMarker { marker, .. } => out.push(Expected::Sent(*marker)),
            _ => {}
        }
    }
    out
}

fn same_variant(a: &MarkerType, b: &MarkerType) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn marker_ts(m: &MarkerType) -> u64 {
    match *m {
        MarkerType::SampleStart(t)
        | MarkerType::SampleEnd(t)
        | MarkerType::RoundStart(t)
        | MarkerType::RoundEnd(t) => t,
    }
}

/// The markers checked against the commands sent; returns the runner's samples (its
/// SampleStart to SampleEnd) and the rounds (RoundStart to RoundEnd) sent.
fn check_markers(t: &ExecutionTimestamps, sent: &[Command]) -> (Vec<(u64, u64)>, Vec<(u64, u64)>) {
    let want = expected_markers(sent);
    if want.len() != t.markers.len() {
        fail(format!(
            "{} markers, the runner notes {} of the commands sent: {:?}",
            t.markers.len(),
            want.len(),
            t.markers
        ));
    }
    let (mut samples, mut rounds) = (Vec::new(), Vec::new());
    let (mut sample_start, mut round_start, mut runner_last) = (None, None, 0);
    for (i, (got, want)) in t.markers.iter().zip(&want).enumerate() {
        match want {
            Expected::Sent(m) if got != m => {
                fail(format!("marker {i}: {got:?}, the integration sent {m:?}"))
            }
            Expected::Runner(m) if !same_variant(got, m) => fail(format!(
                "marker {i}: {got:?}, the runner notes a {m:?} there (its time aside)"
            )),
            Expected::Runner(_) if marker_ts(got) < runner_last => fail(format!(
                "marker {i}: {got:?} before the runner's previous one"
            )),
            Expected::Runner(_) => runner_last = marker_ts(got),
            Expected::Sent(_) => {}
        }
        match (want, got) {
            (Expected::Runner(_), MarkerType::SampleStart(s)) => sample_start = Some(*s),
            (Expected::Runner(_), MarkerType::SampleEnd(e)) => {
                samples.push((sample_start.take().unwrap(), *e))
            }
            (Expected::Sent(_), MarkerType::RoundStart(s)) => round_start = Some(*s),
            (Expected::Sent(_), MarkerType::RoundEnd(e)) => {
                if let Some(s) = round_start.take() {
                    rounds.push((s, *e));
                }
            }
            _ => {}
        }
    }
    (samples, rounds)
}

fn profile(dir: &Path, sent_path: &str) -> String {
    let results = dir.join("results");
    let stamps = ExecutionTimestamps::load_from(&results).unwrap_or_else(|e| fail(e));
    let sent: Vec<Command> = std::fs::read(sent_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .unwrap_or_else(|e| fail(format!("{sent_path}: {e}")));
    if stamps.uri_by_ts.is_empty() {
        fail("an empty uri_by_ts: the runner says No memory results found".into());
    }
    // ArtifactExt's encoding: what the runner would write of what it read, byte for byte.
    let raw = std::fs::read(results.join(ExecutionTimestamps::FILE)).unwrap();
    if rmp_serde::to_vec_named(&stamps).unwrap() != raw {
        fail(format!(
            "{} is not what the runner's types encode of it",
            ExecutionTimestamps::FILE
        ));
    }
    let sent_uris: Vec<&str> = sent
        .iter()
        .filter_map(|c| match c {
            Command::CurrentBenchmark { uri, .. } => Some(uri.as_str()),
            _ => None,
        })
        .collect();
    let uris: Vec<&str> = stamps.uri_by_ts.iter().map(|(_, u)| u.as_str()).collect();
    if uris != sent_uris {
        fail(format!("uri_by_ts {uris:?}, sent {sent_uris:?}"));
    }
    let (windows, rounds) = check_markers(&stamps, &sent);
    for &(s, e) in &rounds {
        if !windows.iter().any(|&(ws, we)| ws <= s && s <= e && e <= we) {
            fail(format!("the round {s}..{e} is in no sample: {windows:?}"));
        }
    }
    let (name, events) = read_artifact(&results.display().to_string()).unwrap_or_else(|e| fail(e));
    let (mut mallocs, mut frees, mut other) = (0, 0, 0);
    for e in &events {
        if !windows
            .iter()
            .any(|&(s, t)| e.timestamp >= s && e.timestamp < t)
        {
            fail(format!("an event outside every sample: {e:?}"));
        }
        match e.kind {
            MemtrackEventKind::Malloc { .. } => mallocs += 1,
            MemtrackEventKind::Free => frees += 1,
            _ => other += 1,
        }
    }
    format!(
        "{name}: {} events (Malloc {mallocs}, Free {frees}, other {other}) in {} samples, \
         {} markers as the runner notes them ({} rounds in their samples), the same bytes \
         re-encoded, uris {}",
        events.len(),
        windows.len(),
        stamps.markers.len(),
        rounds.len(),
        uris.join(",")
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verdict = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["client"] => client(false, None),
        ["client", "--refused"] => client(true, None),
        ["client", "--sent", file] => client(false, Some(file)),
        ["client", "--refused", "--sent", file] => client(true, Some(file)),
        ["profile", dir, sent] => profile(Path::new(dir), sent),
        _ => fail(
            "usage: twin_integration client [--refused] [--sent FILE] | profile DIR SENT".into(),
        ),
    };
    println!("twin: ok: {verdict}");
}
