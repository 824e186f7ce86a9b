//! A twin of CodSpeed's runner 5.0.2 on the FIFO side, for memtrack's tests: it creates
//! /tmp/runner.ctl.fifo and /tmp/runner.ack.fifo as the runner does (src/executor/shared/fifo.rs:
//! unlink, mkfifo 0700, both ends opened read-write and non-blocking before the benchmark
//! starts), runs exec-harness with the stdin plan the way the runner does
//! (src/cli/exec/multi_targets.rs, src/executor/helpers/run_with_env.rs, env.rs), answers
//! every frame as the runner's walltime or memory executor answers it, decodes every frame
//! with serde types declared as crates/runner-shared/src/fifo.rs declares them, and checks
//! every frame, its order and its answer. It prints one verdict line: `twin: ok ...` (exit 0)
//! or `twin: FAIL: ...` (exit 1).
//!
//! With --tracker, memory mode is the runner's end to end: the memory executor starts the
//! tracker with exec-harness's shell below it and turns StartProfiler/StopProfiler into its
//! IPC's Enable/Disable (tracker.rs).
//!
//! Usage: runner-twin --mode walltime|memory --bin DIR --plan FILE [--fault KIND]
//!                    [--tracker CODSPEED_MEMTRACK [--before COMMAND]]
//!   --bin: where `exec-harness` is (prepended to PATH, as introspection wrappers would be)
//!   --tracker: run memory mode under this codspeed-memtrack, as runner 5.0.2 does
//!   --before: a command the same bash runs before exec-harness (outside every window)
//!   --plan: the JSON array of BenchmarkCommand the runner writes
//!   --checker: tools/check-codspeed-artifacts, run on the walltime profile folder (optional)
//!   --fault: silent (read, never answer), stall:VARIANT (stop answering at the first
//!            VARIANT), err:VARIANT (answer Err to the first VARIANT), close:VARIANT (close
//!            both FIFOs on the first VARIANT), stale (FIFOs left by a runner gone: nobody
//!            reads them, and exec-harness must run as by hand)

mod tracker;
mod walltime;

use runner_twin::fail;
use runner_twin::fifo::RunnerFifo;
use runner_twin::runner::{monotonic_ns, Command, ExecutionTimestamps, IntegrationMode};
use serde::Deserialize;
use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};
use tracker::Tracker;
use walltime::{check_walltime_bench, check_walltime_timestamps, load_results};

/// The runner's CURRENT_PROTOCOL_VERSION and MINIMAL_SUPPORTED_PROTOCOL_VERSION.
const PROTOCOL_CURRENT: u64 = 2;
const PROTOCOL_MINIMAL: u64 = 1;
/// A failing exchange must end exec-harness within its answer timeout (5 s) and some slack.
const FAULT_BOUND: Duration = Duration::from_secs(15);
const RUN_BOUND: Duration = Duration::from_secs(120);

/// exec-harness's BenchmarkCommand (crates/exec-harness/src/lib.rs), only what the twin reads.
#[derive(Deserialize)]
struct Benchmark {
    command: Vec<String>,
    name: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Walltime,
    Memory,
}

enum Fault {
    None,
    Silent,
    Stall(String),
    Stale,
    Err(String),
    Close(String),
}

struct Args {
    mode: Mode,
    bin: PathBuf,
    plan: PathBuf,
    checker: Option<PathBuf>,
    fault: Fault,
    tracker: Option<PathBuf>,
    before: Option<String>,
}

/// One frame received, with the runner's CLOCK_MONOTONIC when it arrived.
struct Frame {
    cmd: Command,
    at: u64,
}

fn parse_args() -> Args {
    let mut it = std::env::args().skip(1);
    let (mut mode, mut bin, mut plan, mut fault) = (None, None, None, Fault::None);
    let (mut checker, mut tracker, mut before) = (None, None, None);
    while let Some(a) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| fail(format!("{a} needs a value")));
        match a.as_str() {
            "--mode" if v == "walltime" => mode = Some(Mode::Walltime),
            "--mode" if v == "memory" => mode = Some(Mode::Memory),
            "--bin" => bin = Some(PathBuf::from(v)),
            "--plan" => plan = Some(PathBuf::from(v)),
            "--checker" => checker = Some(PathBuf::from(v)),
            "--tracker" => tracker = Some(PathBuf::from(v)),
            "--before" => before = Some(v),
            "--fault" if v == "silent" => fault = Fault::Silent,
            "--fault" if v == "stale" => fault = Fault::Stale,
            "--fault" if v.starts_with("stall:") => fault = Fault::Stall(v[6..].to_string()),
            "--fault" if v.starts_with("err:") => fault = Fault::Err(v[4..].to_string()),
            "--fault" if v.starts_with("close:") => fault = Fault::Close(v[6..].to_string()),
            _ => fail(format!("bad argument {a} {v}")),
        }
    }
    match (mode, bin, plan) {
        (Some(mode), Some(bin), Some(plan)) => Args {
            mode,
            bin,
            plan,
            checker,
            fault,
            tracker,
            before,
        },
        _ => fail("usage: runner-twin --mode walltime|memory --bin DIR --plan FILE".into()),
    }
}

// ---- exec-harness as the runner starts it ---------------------------------------------------

/// What get_base_injected_env gives the benchmark, and the runner's PATH.
fn injected_env(mode: Mode, profile: &Path, bin: &Path) -> Vec<(String, String)> {
    let walltime = mode == Mode::Walltime;
    let mut env = vec![
        ("PYTHONHASHSEED".into(), "0".into()),
        (
            "PYTHON_PERF_JIT_SUPPORT".into(),
            if walltime { "1" } else { "0" }.into(),
        ),
        ("ARCH".into(), std::env::consts::ARCH.into()),
        ("CODSPEED_ENV".into(), "runner".into()),
        (
            "CODSPEED_RUNNER_MODE".into(),
            if walltime { "walltime" } else { "memory" }.into(),
        ),
        (
            "CODSPEED_PROFILE_FOLDER".into(),
            profile.display().to_string(),
        ),
        (
            "PATH".into(),
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
    ];
    if walltime {
        env.push((
            "JAVA_TOOL_OPTIONS".into(),
            "-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
             -XX:+EnableDynamicAgentLoading -Djdk.attach.allowAttachSelf=true"
                .into(),
        ));
    }
    env
}

/// The env file of create_env_file: `bash -c export`, then `export K='V'` per injected value.
fn write_env_file(path: &Path, env: &[(String, String)]) {
    let out = Process::new("bash")
        .args(["-c", "export"])
        .output()
        .unwrap();
    let mut text = String::from_utf8(out.stdout).unwrap();
    text.push('\n');
    let exports: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("export {k}='{v}'"))
        .collect();
    text.push_str(&exports.join("\n"));
    fs::write(path, text).unwrap();
}

/// Walltime: `bash -c "source ENV && bash SCRIPT"` with the pipe command in SCRIPT
/// (wall_time/executor.rs); memory: the `source ENV && PIPE` that codspeed-memtrack's
/// `track` runs through `bash -c` (memory/executor.rs), under the tracker when there is one.
/// A --before command runs first in the same bash, which saves its pid (the tracker's root).
fn spawn(
    args: &Args,
    work: &Path,
    profile: &Path,
    plan_json: &str,
    tracker: Option<&Tracker>,
) -> (Child, PathBuf) {
    let env_file = work.join("env.sh");
    write_env_file(&env_file, &injected_env(args.mode, profile, &args.bin));
    let pipe = format!("exec-harness - <<'CODSPEED_EOF'\n{plan_json}\nCODSPEED_EOF");
    let bash_command = match args.mode {
        Mode::Walltime => {
            let script = work.join("bench.sh");
            fs::write(&script, &pipe).unwrap();
            format!("source {} && bash {}", env_file.display(), script.display())
        }
        Mode::Memory => format!(
            "source {} && {}echo $$ > {} && {pipe}",
            env_file.display(),
            args.before
                .as_ref()
                .map_or(String::new(), |b| format!("{b} && ")),
            work.join("bash.pid").display()
        ),
    };
    let stderr_path = work.join("stderr");
    let mut process = match (tracker, &args.tracker) {
        (Some(t), Some(path)) => t.command(path, &profile.join("results"), &bash_command),
        _ => {
            let mut p = Process::new("bash");
            p.args(["-c", &bash_command]);
            p
        }
    };
    let child = process
        .stdin(Stdio::null())
        .stderr(File::create(&stderr_path).unwrap())
        .pre_exec_group()
        .spawn()
        .unwrap_or_else(|e| fail(format!("cannot start {:?}: {e}", process.get_program())));
    (child, stderr_path)
}

/// A process group of its own for the benchmark's shell, so that what it leaves can be seen.
/// (setpgid rather than CommandExt::process_group, which Debian 12's rustc 1.63 lacks.)
trait NewGroup {
    fn pre_exec_group(&mut self) -> &mut Self;
}

impl NewGroup for Process {
    fn pre_exec_group(&mut self) -> &mut Self {
        // SAFETY: setpgid is async-signal-safe.
        unsafe {
            self.pre_exec(|| {
                if libc::setpgid(0, 0) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            })
        }
    }
}

// ---- Serving, as handle_fifo_messages and the executors' on_cmd answer ---------------------

fn answer(mode: Mode, cmd: &Command) -> Option<Command> {
    Some(match cmd {
        Command::GetIntegrationMode => Command::IntegrationModeResponse(match mode {
            Mode::Walltime => IntegrationMode::Walltime,
            Mode::Memory => IntegrationMode::Analysis,
        }),
        // The runner bails out (and stops answering) on a version it cannot speak; memory
        // profiling needs version 2.
        Command::SetVersion(v) if *v > PROTOCOL_CURRENT || *v < PROTOCOL_MINIMAL => return None,
        Command::SetVersion(v) if mode == Mode::Memory && *v < 2 => return None,
        Command::SetIntegration { name, .. } if mode == Mode::Memory && name != "exec-harness" => {
            return None
        }
        Command::CurrentBenchmark { .. }
        | Command::StartProfiler
        | Command::StopProfiler
        | Command::SetIntegration { .. }
        | Command::AddMarker { .. }
        | Command::SetVersion(_) => Command::Ack,
        _ => Command::Err,
    })
}

/// What serve saw: the frames, what the runner noted, the exit status and the time it took.
struct Served {
    frames: Vec<Frame>,
    timestamps: ExecutionTimestamps,
    status: i32,
    took: Duration,
}

/// Serve until exec-harness's shell (or its tracker) exits.
fn serve(
    args: &Args,
    fifo: &mut RunnerFifo,
    child: &mut Child,
    mut tracker: Option<&mut Tracker>,
) -> Served {
    let start = Instant::now();
    let mut frames = Vec::new();
    let mut timestamps = ExecutionTimestamps::default();
    let mut faulted = false;
    loop {
        while let Some(cmd) = fifo.recv(100) {
            let at = monotonic_ns();
            // exec-harness reads each answer before it sends the next frame.
            if matches!(args.fault, Fault::None) && fifo.unread_answers() != 0 {
                fail(format!("{cmd:?} came before the previous answer was read"));
            }
            let hit = |v: &String| !faulted && v == cmd.variant();
            let reply = match &args.fault {
                Fault::Silent => None,
                Fault::Stall(v) if faulted || hit(v) => None,
                Fault::Err(v) if hit(v) => Some(Command::Err),
                Fault::Close(v) if hit(v) => {
                    fifo.close();
                    None
                }
                _ => match tracker.as_deref_mut().and_then(|t| t.on_cmd(&cmd)) {
                    Some(r) => Some(r),
                    None => answer(args.mode, &cmd),
                },
            };
            faulted |= matches!(&args.fault,
                Fault::Err(v) | Fault::Close(v) | Fault::Stall(v) if v == cmd.variant());
            if reply == Some(Command::Ack) {
                timestamps.note(&cmd);
            }
            if let Some(r) = reply {
                fifo.send(&r);
            } else if matches!(args.fault, Fault::None) {
                fail(format!("the runner would stop serving at {cmd:?}"));
            }
            frames.push(Frame { cmd, at });
        }
        if let Some(st) = child.try_wait().unwrap() {
            if matches!(args.fault, Fault::None) && fifo.unread_answers() != 0 {
                fail("exec-harness exited without reading its last answer".into());
            }
            return Served {
                frames,
                timestamps,
                status: st.code().unwrap_or(128),
                took: start.elapsed(),
            };
        }
        if start.elapsed() > RUN_BOUND {
            // SAFETY: the child leads its own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            fail(format!("exec-harness still runs after {RUN_BOUND:?}"));
        }
    }
}

// ---- The checks -----------------------------------------------------------------------------

fn expect(frames: &[Frame], i: &mut usize, want: &Command) {
    match frames.get(*i) {
        Some(f) if f.cmd == *want => *i += 1,
        other => fail(format!(
            "frame {}: expected {want:?}, got {:?}",
            *i,
            other.map(|f| &f.cmd)
        )),
    }
}

/// SetVersion(2), GetIntegrationMode per instrument tried, then SetIntegration.
fn check_greeting(mode: Mode, frames: &[Frame], i: &mut usize) {
    let tries = if mode == Mode::Walltime { 2 } else { 1 };
    for _ in 0..tries {
        expect(frames, i, &Command::SetVersion(PROTOCOL_CURRENT));
        expect(frames, i, &Command::GetIntegrationMode);
    }
    expect(
        frames,
        i,
        &Command::SetIntegration {
            name: "exec-harness".into(),
            version: "1.3.0".into(),
        },
    );
}

fn uri_of(b: &Benchmark) -> String {
    format!(
        "exec_harness::{}",
        b.name.clone().unwrap_or_else(|| b.command.join(" "))
    )
}

/// The results file as today: what the independent checker validates against the runner's
/// structs.
fn check_with(checker: &Path, mode: &str, profile: &Path) {
    // Through its #! (/usr/bin/python3 and Debian's modules), whatever python3 PATH finds.
    let out = Process::new(checker)
        .arg(mode)
        .arg(profile)
        .output()
        .unwrap_or_else(|e| fail(format!("cannot run {}: {e}", checker.display())));
    if !out.status.success() {
        fail(format!(
            "{}: {}",
            checker.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
}

fn check_run(
    args: &Args,
    plan: &[Benchmark],
    frames: &[Frame],
    work: &Path,
    tracker: Option<&Tracker>,
) -> String {
    let profile = &work.join("profile");
    let mut i = 0;
    if matches!(args.fault, Fault::Stale) {
        // By hand, memory mode tracks by itself (and needs privileges): walltime shows it.
        if args.mode != Mode::Walltime {
            fail("--fault stale checks a walltime run".into());
        }
        let (_, json) = load_results(profile);
        let n = json["benchmarks"].as_array().map_or(0, |b| b.len());
        if !frames.is_empty() || n != plan.len() {
            fail(format!(
                "with FIFOs nobody reads: {} frames, {n} benchmarks",
                frames.len()
            ));
        }
        return format!("no frame, {n} benchmarks as by hand");
    }
    check_greeting(args.mode, frames, &mut i);
    let mut rounds = 0;
    match args.mode {
        Mode::Walltime => {
            let (pid, json) = load_results(profile);
            if let Some(checker) = &args.checker {
                check_with(checker, "walltime", profile);
            }
            let benches = json["benchmarks"]
                .as_array()
                .unwrap_or_else(|| fail("no benchmarks".into()));
            if benches.len() != plan.len() || json["creator"]["pid"].as_i64() != Some(pid as i64) {
                fail(format!(
                    "results for {} benchmarks by pid {}",
                    benches.len(),
                    json["creator"]["pid"]
                ));
            }
            for (b, res) in plan.iter().zip(benches) {
                check_walltime_bench(frames, &mut i, pid, b, res);
                rounds += res["stats"]["rounds"].as_u64().unwrap();
            }
            check_walltime_timestamps(profile, plan, benches);
        }
        Mode::Memory => {
            let pid = match frames.get(i + 2).map(|f| &f.cmd) {
                Some(Command::CurrentBenchmark { pid, .. }) => *pid,
                other => fail(format!(
                    "frame {}: expected CurrentBenchmark, got {other:?}",
                    i + 2
                )),
            };
            for b in plan {
                expect(frames, &mut i, &Command::StartProfiler);
                expect(frames, &mut i, &Command::StopProfiler);
                expect(
                    frames,
                    &mut i,
                    &Command::CurrentBenchmark {
                        pid,
                        uri: uri_of(b),
                    },
                );
            }
            if let Some(t) = tracker {
                let root = fs::read_to_string(work.join("bash.pid")).unwrap_or_default();
                let root = root
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| fail("no bash pid".into()));
                if i != frames.len() {
                    fail(format!(
                        "{} frames after the last benchmark: {:?}",
                        frames.len() - i,
                        frames[i].cmd
                    ));
                }
                let said = tracker::check(t, plan, frames, &profile.join("results"), pid, root);
                if let Some(checker) = &args.checker {
                    check_with(checker, "memory", profile);
                }
                return format!("{} frames, {} benchmarks, {said}", frames.len(), plan.len());
            }
            // The runner's tracker records: exec-harness leaves results/ to it.
            let left: Vec<_> = fs::read_dir(profile.join("results")).unwrap().collect();
            if !left.is_empty() || profile.join("memtrack").exists() {
                fail(format!(
                    "exec-harness wrote into the profile folder: {left:?}"
                ));
            }
        }
    }
    if i != frames.len() {
        fail(format!(
            "{} frames after the last benchmark: {:?}",
            frames.len() - i,
            frames[i].cmd
        ));
    }
    format!(
        "{} frames, {} benchmarks, {} rounds marked",
        frames.len(),
        plan.len(),
        rounds
    )
}

/// After a fault: a bounded non-zero exit, one sentence naming the runner, no process left.
fn check_fault(status: i32, took: Duration, stderr: &str, pgid: i32) -> String {
    if status == 0 {
        fail("exec-harness exited 0 past a failing runner".into());
    }
    if took > FAULT_BOUND {
        fail(format!("exec-harness took {took:?} to give up"));
    }
    // The sentence is exec-harness's last line; a tracker above it may say its own after.
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("memtrack: wrote "))
        .collect();
    let last = lines.last().copied().unwrap_or("");
    if !last.starts_with("memtrack exec-harness: ") || !last.contains("runner") {
        fail(format!(
            "no sentence about the runner on stderr: {stderr:?}"
        ));
    }
    // SAFETY: a probe of the process group, no signal sent.
    if unsafe { libc::kill(-pgid, 0) } == 0 {
        fail("processes of the benchmark outlived exec-harness".into());
    }
    format!("exit {status} after {took:?}: {last}")
}

fn main() {
    let args = parse_args();
    let plan_json = fs::read_to_string(&args.plan).unwrap_or_else(|e| fail(format!("plan: {e}")));
    let plan: Vec<Benchmark> =
        serde_json::from_str(&plan_json).unwrap_or_else(|e| fail(format!("plan: {e}")));
    let work = std::env::temp_dir().join(format!("runner-twin-{}", std::process::id()));
    let profile = work.join("profile");
    fs::create_dir_all(profile.join("results")).unwrap();
    if args.mode == Mode::Walltime {
        fs::remove_dir(profile.join("results")).unwrap();
    }
    let mut fifo = RunnerFifo::open();
    if matches!(args.fault, Fault::Stale) {
        fifo.close();
    }
    let mut tracker = match (&args.tracker, args.mode) {
        (Some(_), Mode::Memory) => Some(Tracker::new()),
        (Some(_), Mode::Walltime) => fail("--tracker runs memory mode".into()),
        _ => None,
    };
    let (mut child, stderr_path) =
        spawn(&args, &work, &profile, plan_json.trim(), tracker.as_ref());
    let pgid = child.id() as i32;
    if let Some(Err(e)) = tracker.as_mut().map(|t| t.accept()) {
        // SAFETY: the child leads its own process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
        let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
        fail(format!("{e}: {stderr}"));
    }
    let Served {
        frames,
        timestamps,
        status,
        took,
    } = serve(&args, &mut fifo, &mut child, tracker.as_mut());
    // Where the memory executor and the walltime profilers save what the runner noted.
    let saved = match (args.mode, &tracker) {
        (Mode::Memory, Some(_)) => Some(profile.join("results")),
        (Mode::Walltime, _) => Some(profile.clone()),
        _ => None,
    };
    if let Some(folder) = saved {
        timestamps.save_to(&folder).unwrap_or_else(|e| fail(e));
    }
    let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    for (n, f) in frames.iter().enumerate() {
        println!("twin: frame {n}: {:?}", f.cmd);
    }
    print!(
        "{}",
        stderr
            .lines()
            .map(|l| format!("twin: stderr: {l}\n"))
            .collect::<String>()
    );
    let verdict = match args.fault {
        Fault::None | Fault::Stale if status != 0 => fail(format!("exec-harness exited {status}")),
        Fault::None | Fault::Stale => check_run(&args, &plan, &frames, &work, tracker.as_ref()),
        _ => check_fault(status, took, &stderr, pgid),
    };
    let _ = fs::remove_dir_all(&work);
    println!("twin: ok: {verdict}");
}
