//! The walltime checks: the results JSON exec-harness wrote, its frames benchmark by benchmark,
//! and the runner's own record of the run.

use crate::{expect, uri_of, Benchmark, Frame};
use runner_twin::fail;
use runner_twin::runner::{Command, ExecutionTimestamps, MarkerType};
use std::fs;
use std::path::{Path, PathBuf};

/// The walltime results file exec-harness wrote: results/PID.json, PID its own.
pub(crate) fn load_results(profile: &Path) -> (i32, serde_json::Value) {
    let dir = profile.join("results");
    let files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())))
        .map(|e| e.unwrap().path())
        .collect();
    if files.len() != 1 || files[0].extension().map_or(true, |x| x != "json") {
        fail(format!("results/ should hold one results file: {files:?}"));
    }
    let pid: i32 = files[0]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let json = serde_json::from_str(&fs::read_to_string(&files[0]).unwrap()).unwrap();
    (pid, json)
}

/// One benchmark's frames in walltime: StartProfiler, a RoundStart/RoundEnd pair per measured
/// round inside the sample window, StopProfiler, CurrentBenchmark.
pub(crate) fn check_walltime_bench(
    frames: &[Frame],
    i: &mut usize,
    pid: i32,
    b: &Benchmark,
    res: &serde_json::Value,
) {
    let rounds = res["stats"]["rounds"]
        .as_u64()
        .unwrap_or_else(|| fail("no stats.rounds".into()));
    let window_start = frames.get(*i).map_or(0, |f| f.at);
    expect(frames, i, &Command::StartProfiler);
    let (mut last, mut min, mut max) = (window_start, u64::MAX, 0);
    for r in 0..rounds {
        let (s, e) = match (
            frames.get(*i).map(|f| &f.cmd),
            frames.get(*i + 1).map(|f| &f.cmd),
        ) {
            (
                Some(Command::AddMarker {
                    pid: p1,
                    marker: MarkerType::RoundStart(s),
                }),
                Some(Command::AddMarker {
                    pid: p2,
                    marker: MarkerType::RoundEnd(e),
                }),
            ) if *p1 == pid && *p2 == pid => (*s, *e),
            other => fail(format!(
                "round {r}: expected a RoundStart/RoundEnd pair, got {other:?}"
            )),
        };
        if s < last || e < s {
            fail(format!(
                "round {r}: markers {s}..{e} out of order (previous {last})"
            ));
        }
        last = e;
        min = min.min(e - s);
        max = max.max(e - s);
        *i += 2;
    }
    let window_end = frames.get(*i).map_or(0, |f| f.at);
    expect(frames, i, &Command::StopProfiler);
    if last > window_end {
        fail(format!(
            "a round ends at {last}, after the sample window's end {window_end}"
        ));
    }
    if res["stats"]["min_ns"].as_f64() != Some(min as f64)
        || res["stats"]["max_ns"].as_f64() != Some(max as f64)
    {
        fail(format!(
            "markers give rounds of {min}..{max} ns, the results {}",
            res["stats"]
        ));
    }
    if res["uri"].as_str() != Some(&uri_of(b)) {
        fail(format!("results uri {} for {}", res["uri"], uri_of(b)));
    }
    expect(
        frames,
        i,
        &Command::CurrentBenchmark {
            pid,
            uri: uri_of(b),
        },
    );
}

/// The runner's own record of a walltime run, read back from the profile folder as its
/// profiler saved it: per benchmark its URI, and SampleStart, a RoundStart/RoundEnd pair per
/// measured round inside it, SampleEnd. What the runner matches samples to benchmarks with.
pub(crate) fn check_walltime_timestamps(
    profile: &Path,
    plan: &[Benchmark],
    benches: &[serde_json::Value],
) {
    let t = ExecutionTimestamps::load_from(profile).unwrap_or_else(|e| fail(e));
    let uris: Vec<String> = t.uri_by_ts.iter().map(|(_, u)| u.clone()).collect();
    if uris != plan.iter().map(uri_of).collect::<Vec<_>>() {
        fail(format!("the timestamps file's URIs: {uris:?}"));
    }
    let mut m = t.markers.iter();
    for (b, res) in plan.iter().zip(benches) {
        let bad =
            |what: &str| -> ! { fail(format!("{}: markers: {what}: {:?}", uri_of(b), t.markers)) };
        let mut last = match m.next() {
            Some(MarkerType::SampleStart(s)) => *s,
            _ => bad("no SampleStart"),
        };
        for _ in 0..res["stats"]["rounds"].as_u64().unwrap() {
            match (m.next(), m.next()) {
                (Some(MarkerType::RoundStart(s)), Some(MarkerType::RoundEnd(e)))
                    if last <= *s && s <= e =>
                {
                    last = *e
                }
                _ => bad("a round pair out of its sample"),
            }
        }
        match m.next() {
            Some(MarkerType::SampleEnd(e)) if last <= *e => {}
            _ => bad("no SampleEnd after the last round"),
        }
    }
    if m.next().is_some() {
        fail(format!("markers after the last benchmark: {:?}", t.markers));
    }
}
