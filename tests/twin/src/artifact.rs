//! The tracker's results as the runner reads them: the one ROOTPID.MemtrackArtifact.msgpack of
//! a results folder, zstd frames of rmp-serde events (artifacts/memtrack).

use crate::runner::MemtrackEvent;
use serde::Deserialize;
use std::io::{Cursor, Read};

/// The results folder's one MemtrackArtifact, decoded as the runner decodes it; every byte must
/// decode (the runner's stream stops silently at the first event it cannot read).
pub fn read_artifact(results: &str) -> Result<(String, Vec<MemtrackEvent>), String> {
    let names: Vec<String> = std::fs::read_dir(results)
        .map_err(|e| format!("{results}: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("MemtrackArtifact"))
        .collect();
    if names.len() != 1 {
        return Err(format!(
            "{} MemtrackArtifact files in {results}: {names:?}",
            names.len()
        ));
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
