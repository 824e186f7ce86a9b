//! The memory executor's tracker side (src/executor/memory/executor.rs): the runner starts
//! `codspeed-memtrack track --output PROFILE/results --ipc-server NAME "source ENV && ..."`,
//! accepts the tracker's IpcSender within 5 s, then serves the FIFO: StartProfiler is an Enable
//! and StopProfiler a Disable over the IPC (an Err from the tracker is an Err on the FIFO),
//! before the shared handling answers Ack and notes the sample markers. Once the command has
//! exited the runner saves its ExecutionTimestamps in results/.
//!
//! The checks: every IPC exchange and its answer, the results folder (the tracker's one
//! ROOTPID.MemtrackArtifact.msgpack and the runner's timestamps file, nothing of exec-harness),
//! and the artifact against fixtures/README.md's truth, benchmark by benchmark.

use crate::{Benchmark, Frame};
use runner_twin::artifact::read_artifact;
use runner_twin::fail;
use runner_twin::ipc::{send_command, OneShotServer};
use runner_twin::runner::{
    monotonic_ns, Command, ExecutionTimestamps, IpcCommand, IpcResponse, MarkerType, MemtrackEvent,
    MemtrackEventKind,
};
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::io::RawFd;
use std::path::Path;
use std::process::Command as Process;

/// One IPC exchange: what was sent, when, and the answer, when it came.
struct Exchange {
    command: IpcCommand,
    sent: u64,
    response: IpcResponse,
    answered: u64,
}

pub(crate) struct Tracker {
    server: OneShotServer,
    sender: Option<RawFd>,
    exchanges: Vec<Exchange>,
}

impl Tracker {
    pub(crate) fn new() -> Self {
        Tracker {
            server: OneShotServer::new().unwrap_or_else(|e| fail(e)),
            sender: None,
            exchanges: Vec::new(),
        }
    }

    /// build_memtrack_command's command line.
    pub(crate) fn command(&self, tracker: &Path, results: &Path, bash_command: &str) -> Process {
        let mut p = Process::new(tracker);
        p.arg("track")
            .arg("--output")
            .arg(results)
            .arg("--ipc-server")
            .arg(&self.server.name)
            .arg(bash_command);
        p
    }

    /// The runner's accept, bounded by its 5 s timeout; Err says why.
    pub(crate) fn accept(&mut self) -> Result<(), String> {
        self.sender = Some(self.server.accept()?);
        Ok(())
    }

    fn ipc(&mut self, command: IpcCommand) -> IpcResponse {
        let sent = monotonic_ns();
        let response = send_command(self.sender.unwrap(), command)
            .unwrap_or_else(|e| fail(format!("the tracker's IPC: {e}")));
        self.exchanges.push(Exchange {
            command,
            sent,
            response,
            answered: monotonic_ns(),
        });
        response
    }

    /// on_cmd: Some(answer) replaces the shared handling's Ack.
    pub(crate) fn on_cmd(&mut self, cmd: &Command) -> Option<Command> {
        let ipc = match cmd {
            Command::StartProfiler => IpcCommand::Enable,
            Command::StopProfiler => IpcCommand::Disable,
            _ => return None,
        };
        match self.ipc(ipc) {
            IpcResponse::Err => Some(Command::Err),
            IpcResponse::Ack => None,
        }
    }

    /// An Enable and a Disable per benchmark, each answered Ack, each sent while its
    /// StartProfiler or StopProfiler was served: the windows [Enable sent, Disable answered].
    fn windows(&self, frames: &[Frame], n: usize) -> Vec<(u64, u64)> {
        let starts: Vec<u64> = frames
            .iter()
            .filter(|f| matches!(f.cmd, Command::StartProfiler | Command::StopProfiler))
            .map(|f| f.at)
            .collect();
        if self.exchanges.len() != 2 * n || starts.len() != 2 * n {
            fail(format!(
                "{} IPC exchanges for {} StartProfiler/StopProfiler frames and {n} benchmarks",
                self.exchanges.len(),
                starts.len()
            ));
        }
        for (k, (x, at)) in self.exchanges.iter().zip(&starts).enumerate() {
            let want = if k % 2 == 0 {
                IpcCommand::Enable
            } else {
                IpcCommand::Disable
            };
            if x.command != want || x.response != IpcResponse::Ack || x.sent < *at {
                fail(format!(
                    "IPC exchange {k}: {:?} -> {:?} at {}, expected {want:?} -> Ack after the \
                     frame at {at}",
                    x.command, x.response, x.sent
                ));
            }
            println!("twin: ipc {k}: {:?} -> {:?}", x.command, x.response);
        }
        self.exchanges
            .chunks(2)
            .map(|p| (p[0].sent, p[1].answered))
            .collect()
    }
}

/// What the runner's teardown reads back: the timestamps file decodes, one URI per benchmark,
/// a SampleStart and a SampleEnd each.
fn check_timestamps(results: &Path, plan: &[Benchmark]) {
    let t = ExecutionTimestamps::load_from(results).unwrap_or_else(|e| fail(e));
    let uris: Vec<String> = t.uri_by_ts.into_iter().map(|(_, u)| u).collect();
    let want: Vec<String> = plan.iter().map(crate::uri_of).collect();
    let samples = t.markers.chunks(2).all(|p| {
        matches!(
            p,
            [MarkerType::SampleStart(s), MarkerType::SampleEnd(e)] if s <= e
        )
    });
    if uris != want || t.markers.len() != 2 * plan.len() || !samples {
        fail(format!(
            "the timestamps file holds {uris:?} and markers {:?}",
            t.markers
        ));
    }
}

/// The results folder holds the tracker's artifact, named by the root (bash, whose $$ the
/// command saved), and the runner's timestamps file: nothing else.
fn check_results(results: &Path, root: i32) {
    let mut names: Vec<String> = fs::read_dir(results)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want = vec![
        ExecutionTimestamps::FILE.to_string(),
        format!("{root}.MemtrackArtifact.msgpack"),
    ];
    want.sort();
    if names != want {
        fail(format!(
            "results/ holds {names:?}, the runner expects {want:?}"
        ));
    }
}

fn sizes(events: &[&MemtrackEvent], kind: fn(&MemtrackEventKind) -> Option<u64>) -> Vec<u64> {
    let mut v: Vec<u64> = events.iter().filter_map(|e| kind(&e.kind)).collect();
    v.sort();
    v
}

fn has_all(got: &[u64], want: &[u64]) -> bool {
    want.iter().all(|w| got.contains(w))
}

/// fixtures/README.md's truth for one benchmark's own process: `churn N` N Malloc and N Free;
/// `mapping` its 22 mallocs and frees, its mappings of known sizes, its brk up and back.
fn check_truth(b: &Benchmark, events: &[&MemtrackEvent]) -> String {
    let mallocs = sizes(events, |k| match k {
        MemtrackEventKind::Malloc { size } => Some(*size),
        _ => None,
    });
    let frees = events
        .iter()
        .filter(|e| e.kind == MemtrackEventKind::Free)
        .count();
    let fixture = Path::new(&b.command[0])
        .file_name()
        .unwrap()
        .to_string_lossy();
    let want = match (fixture.as_ref(), b.command.get(1)) {
        ("churn", n) => n.map_or(1000, |n| n.parse().unwrap()),
        ("mapping", None) => 22,
        _ => fail(format!("no truth known for {:?}", b.command)),
    };
    if mallocs.len() != want || frees != want {
        fail(format!(
            "{:?}: {} Malloc and {frees} Free, fixtures/README.md says {want} of each",
            b.command,
            mallocs.len()
        ));
    }
    if fixture == "mapping" {
        check_mapping(events);
    }
    format!("{fixture}: {want} Malloc, {frees} Free")
}

fn check_mapping(events: &[&MemtrackEvent]) {
    let mmaps = sizes(events, |k| match k {
        MemtrackEventKind::Mmap { size } => Some(*size),
        _ => None,
    });
    let munmaps = sizes(events, |k| match k {
        MemtrackEventKind::Munmap { size } => Some(*size),
        _ => None,
    });
    let brks: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.kind, MemtrackEventKind::Brk { .. }))
        .map(|e| e.addr)
        .collect();
    // Its own phases' maps; ld.so's maps of the libraries come with them.
    if !has_all(&mmaps, &[8192, 196708, 65536, 4096, 12288])
        || !has_all(&munmaps, &[8192, 196708, 131072, 4096, 12288])
    {
        fail(format!("mapping: Mmap {mmaps:?}, Munmap {munmaps:?}"));
    }
    // Up by 65536, then back (malloc's own heap growth comes before).
    if !brks.windows(2).any(|w| w[0] == w[1] + 65536) {
        fail(format!("mapping: no brk up by 65536 and back: {brks:?}"));
    }
    println!(
        "twin: mapping: {} Mmap, {} Munmap, {} Brk",
        mmaps.len(),
        munmaps.len(),
        brks.len()
    );
}

/// The memory run through the tracker, once the command has exited and the timestamps file is
/// saved: harness is exec-harness's pid (its CurrentBenchmark), root bash's.
pub(crate) fn check(
    t: &Tracker,
    plan: &[Benchmark],
    frames: &[Frame],
    results: &Path,
    harness: i32,
    root: i32,
) -> String {
    let windows = t.windows(frames, plan.len());
    check_results(results, root);
    check_timestamps(results, plan);
    let (_, events) = read_artifact(&results.display().to_string()).unwrap_or_else(|e| fail(e));
    // Nothing outside the windows: not the command run before exec-harness in the same bash.
    if let Some(e) = events.iter().find(|e| {
        !windows
            .iter()
            .any(|(s, end)| (*s..=*end).contains(&e.timestamp))
    }) {
        fail(format!(
            "an event outside every Enable/Disable window {windows:?}: {e:?}"
        ));
    }
    let mut said = Vec::new();
    for (b, (s, end)) in plan.iter().zip(&windows) {
        let own: Vec<&MemtrackEvent> = events
            .iter()
            .filter(|e| (*s..=*end).contains(&e.timestamp) && e.pid != harness && e.pid != root)
            .collect();
        let pids: BTreeSet<i32> = own.iter().map(|e| e.pid).collect();
        if pids.len() != 1 {
            fail(format!(
                "{:?}: events of pids {pids:?}, one process expected",
                b.command
            ));
        }
        said.push(check_truth(b, &own));
    }
    format!("{} events, {}", events.len(), said.join(", "))
}
