//! The runner's published types, declared as CodSpeed runner 5.0.2 declares them: the FIFO's
//! `Command` (crates/runner-shared/src/fifo.rs), its `ExecutionTimestamps` artifact
//! (artifacts/execution_timestamps.rs), the memory artifact's events (artifacts/memtrack) and
//! the tracker's IPC (crates/memtrack/src/ipc.rs). bincode numbers enum variants in declaration
//! order, so the order is the wire format.

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
pub enum MarkerType {
    SampleStart(u64),
    SampleEnd(u64),
    #[serde(alias = "BenchmarkStart")]
    RoundStart(u64),
    #[serde(alias = "BenchmarkEnd")]
    RoundEnd(u64),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
pub enum IntegrationMode {
    Walltime,
    Simulation,
    Analysis,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
pub enum Command {
    CurrentBenchmark { pid: i32, uri: String },
    StartProfiler,
    StopProfiler,
    Ack,
    PingProfiler,
    SetIntegration { name: String, version: String },
    Err,
    AddMarker { pid: i32, marker: MarkerType },
    SetVersion(u64),
    GetIntegrationMode,
    IntegrationModeResponse(IntegrationMode),
}

impl Command {
    pub fn variant(&self) -> &'static str {
        match self {
            Command::CurrentBenchmark { .. } => "CurrentBenchmark",
            Command::StartProfiler => "StartProfiler",
            Command::StopProfiler => "StopProfiler",
            Command::Ack => "Ack",
            Command::PingProfiler => "PingProfiler",
            Command::SetIntegration { .. } => "SetIntegration",
            Command::Err => "Err",
            Command::AddMarker { .. } => "AddMarker",
            Command::SetVersion(_) => "SetVersion",
            Command::GetIntegrationMode => "GetIntegrationMode",
            Command::IntegrationModeResponse(_) => "IntegrationModeResponse",
        }
    }
}

/// What the runner saves as ExecutionTimestamps.msgpack (rmp-serde, named fields): into
/// results/ in memory mode, into the profile folder in walltime (its profiler's finalize).
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ExecutionTimestamps {
    pub uri_by_ts: Vec<(u64, String)>,
    pub markers: Vec<MarkerType>,
}

impl ExecutionTimestamps {
    pub const FILE: &'static str = "ExecutionTimestamps.msgpack";

    /// What handle_fifo_messages notes of a message it answers Ack, on the runner's clock.
    pub fn note(&mut self, cmd: &Command) {
        match cmd {
            Command::StartProfiler => self.markers.push(MarkerType::SampleStart(monotonic_ns())),
            Command::StopProfiler => self.markers.push(MarkerType::SampleEnd(monotonic_ns())),
            Command::CurrentBenchmark { uri, .. } => self.uri_by_ts.push((monotonic_ns(), uri.clone())),
            Command::AddMarker { marker, .. } => self.markers.push(*marker),
            _ => {}
        }
    }

    /// ArtifactExt::save_to.
    pub fn save_to(&self, folder: &std::path::Path) -> Result<(), String> {
        let bytes = rmp_serde::to_vec_named(self).map_err(|e| e.to_string())?;
        std::fs::write(folder.join(Self::FILE), bytes).map_err(|e| format!("{}: {e}", Self::FILE))
    }

    /// ArtifactExt::decode_from_reader, as the runner reads the file back.
    pub fn load_from(folder: &std::path::Path) -> Result<Self, String> {
        let file = std::fs::File::open(folder.join(Self::FILE))
            .map_err(|e| format!("{}: {e}", Self::FILE))?;
        rmp_serde::from_read(file).map_err(|e| format!("{}: {e}", Self::FILE))
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpcCommand {
    Enable,
    Disable,
    Ping,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpcResponse {
    Ack,
    Err,
}

/// An IpcSender as ipc-channel serializes it: its index among the packet's descriptors.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelIndex(pub usize);

/// IpcMessage {command, response_channel: IpcSender<IpcResponse>}.
#[derive(Serialize, Deserialize, Debug)]
pub struct IpcMessage {
    pub command: IpcCommand,
    pub response_channel: ChannelIndex,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemtrackEvent {
    pub pid: i32,
    pub tid: i32,
    pub timestamp: u64,
    pub addr: u64,
    #[serde(flatten)]
    pub kind: MemtrackEventKind,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(tag = "type")]
pub enum MemtrackEventKind {
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

/// CLOCK_MONOTONIC in ns: instrument-hooks' clock, on which markers and events are compared.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
