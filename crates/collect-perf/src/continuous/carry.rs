//! What a window hands the next: the processes still running, as side-band records.

use crate::recording::SideBand;
use crate::replay::Replay;

/// The side-band records that give a new window the processes still running at the end of
/// `replay`: each one's name (its current program's) and its executable mappings.
pub(super) fn carried_side_band(replay: &Replay) -> Vec<SideBand> {
    let mut out = Vec::new();
    for p in replay.processes.iter().filter(|p| p.exit.is_none()) {
        let pid = p.key.pid;
        let image_name = p
            .comms
            .iter()
            .rev()
            .find(|c| c.2)
            .or_else(|| p.comms.iter().find(|c| !c.2))
            .map(|c| c.1.clone())
            .unwrap_or_default();
        out.push(SideBand::Comm {
            pid,
            tid: pid,
            comm: image_name,
            exec: false,
        });
        for t in p
            .threads
            .iter()
            .filter(|t| t.exit.is_none() && t.tid != pid)
        {
            out.push(SideBand::Comm {
                pid,
                tid: t.tid,
                comm: t.comm.clone(),
                exec: false,
            });
        }
        for m in p.mappings.iter().filter(|m| m.to.is_none()) {
            out.push(SideBand::Mmap {
                pid,
                tid: pid,
                addr: m.start,
                len: m.end - m.start,
                pgoff: m.pgoff,
                build_id: m.build_id.clone(),
                prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
                flags: libc::MAP_PRIVATE as u32,
                filename: m.filename.to_string(),
            });
        }
    }
    out
}
