//! Block completion windows seen in the kernel (`pkgmon --async=block`): a `BLOCK` softirq
//! that runs in the idle task (an interrupt on an idle CPU: a completion sent back to the
//! CPU that issued the request, which sleeps waiting for it) always reaches BPF programs, but
//! not always a sampled perf event (Linux 6.18 takes no sample of some tracepoint hits
//! there), so through perf some windows are unseen and their samples stay unattributed.
//!
//! Five programs write one record each to a ring buffer, in every task on every CPU: raw
//! tracepoint programs on `softirq_entry`/`softirq_exit` (the `BLOCK` vector only) and
//! `irq_handler_entry`/`irq_handler_exit` (their arguments are the tracepoints' prototypes:
//! the vector, the interrupt number), and a tracepoint program on `block:block_rq_complete`
//! (device, sector and sectors at the offsets its tracefs format gives). They replace the
//! perf records of those tracepoints; who queued each request stays a perf record (it fires
//! in the task that queued it, which perf samples). A per-CPU array counts, for each
//! program, the records written and those the ring had no room for.

use async_attribution::{BLOCK_VECTOR, Event, What};

use crate::bpf::{Asm, Attachment, Code, Cond, CountedOutput, Helper, Map, MapKind, MapSlot};
use crate::bpf::{Program, Reg, RingBuf, Size, u32_at, u64_at};
use crate::tracefs::Tracefs;
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

const COUNTS: MapSlot = MapSlot(0);
const RING: MapSlot = MapSlot(1);

/// What a record is, by the program that wrote it.
const SOFTIRQ_ENTRY: u32 = 0;
const SOFTIRQ_EXIT: u32 = 1;
const IRQ_ENTRY: u32 = 2;
const IRQ_EXIT: u32 = 3;
const COMPLETE: u32 = 4;
const PROGRAMS: u32 = 5;

/// A record: time, pid and tid (`bpf_get_current_pid_tgid`), CPU, what, three fields.
const RECORD: usize = 48;
const FIELDS: usize = 3;

// The stack frame (offsets from R10): the counter's key, then the record.
const CKEY: i16 = -4;
const REC: i16 = -8 - RECORD as i16;

/// The perf tracepoints whose records the programs replace (`system:name` and, for the
/// softirq ones, the `BLOCK` vector filter perf would have been given).
pub(super) const REPLACED: [(&str, &str, Option<&str>); 5] = [
    ("irq", "softirq_entry", Some("vec == 4")),
    ("irq", "softirq_exit", Some("vec == 4")),
    ("irq", "irq_handler_entry", None),
    ("irq", "irq_handler_exit", None),
    ("block", "block_rq_complete", None),
];

/// Where a program reads a value: its byte offset in the context and its width.
#[derive(Debug, Clone, Copy)]
struct Read {
    off: i16,
    size: Size,
}

/// A raw tracepoint's argument `i` (each a u64 in the context).
const fn arg(i: i16) -> Read {
    Read {
        off: 8 * i,
        size: Size::DW,
    }
}

/// The block kind's windows and completions, from programs attached for the whole run.
#[derive(Debug)]
pub struct BlockPrograms {
    counts: Map,
    ring: RingBuf,
    programs: Vec<Program>,
    attachments: Vec<Attachment>,
}

impl BlockPrograms {
    /// Creates the map and the ring, loads the programs and attaches them: from now on
    /// every `BLOCK` softirq, hard interrupt and request completion is recorded.
    ///
    /// Returns an error if BPF is not permitted, a program is refused (with the verifier's
    /// words) or a tracepoint is missing or has other fields.
    pub fn load() -> Result<BlockPrograms> {
        let complete = Tracefs::find_or_mount()?.event("block", "block_rq_complete")?;
        let fields = [
            field(&complete, "dev")?,
            field(&complete, "sector")?,
            field(&complete, "nr_sector")?,
        ];
        let counts = Map::create(MapKind::PercpuArray, "pkg_acounts", 4, 8, 2 * PROGRAMS)?;
        // 32 MiB, a perf ring's bound: a BLOCK-heavy run writes ~8 MB of records a second, and 4 MiB
        // lost a fifth of them when pkgmon fell half a second behind on a loaded machine.
        let ring = RingBuf::create("pkg_ablock", 1 << 25)?;
        let refs = [&counts, ring.map()];
        let vector = Some(arg(0));
        let raw = [
            ("pkg_bsoftirq_in", "softirq_entry", SOFTIRQ_ENTRY, vector),
            ("pkg_bsoftirq_out", "softirq_exit", SOFTIRQ_EXIT, vector),
            ("pkg_birq_in", "irq_handler_entry", IRQ_ENTRY, None),
            ("pkg_birq_out", "irq_handler_exit", IRQ_EXIT, None),
        ];
        let mut programs = Vec::new();
        let mut attachments = Vec::new();
        for (name, tracepoint, what, vector) in raw {
            let code = program(what, &[arg(0)], vector);
            let p = Program::load_raw_tracepoint(name, &code, &refs)?;
            attachments.push(p.attach_raw(tracepoint)?);
            programs.push(p);
        }
        let code = program(COMPLETE, &fields, None);
        let p = Program::load_tracepoint("pkg_bcomplete", &code, &refs)?;
        attachments.push(p.attach(&complete)?);
        programs.push(p);
        Ok(BlockPrograms {
            counts,
            ring,
            programs,
            attachments,
        })
    }

    /// Detaches the programs: nothing more is recorded or counted.
    pub(super) fn stop(&mut self) {
        self.attachments.clear();
    }

    /// Hands every record written since the last call to `f`, as an attribution event, in
    /// the order written (by time on each CPU).
    pub(super) fn read(&mut self, mut f: impl FnMut(Event)) {
        self.ring.read(|r| {
            if let Some(e) = parse(r) {
                f(e);
            }
        });
    }

    /// `BLOCK` softirqs the kernel ran while the programs were attached (written or not).
    pub fn windows(&self) -> u64 {
        self.count(2 * SOFTIRQ_ENTRY) + self.count(2 * SOFTIRQ_ENTRY + 1)
    }

    /// Records written to the ring.
    pub fn records(&self) -> u64 {
        (0..PROGRAMS).map(|p| self.count(2 * p)).sum()
    }

    /// Records lost: those the ring had no room for, and those the kernel did not run a
    /// program for (it does not nest programs: an interrupt's inside another's).
    pub fn lost(&self) -> u64 {
        let misses: u64 = self.programs.iter().map(Program::misses).sum();
        misses + (0..PROGRAMS).map(|p| self.count(2 * p + 1)).sum::<u64>()
    }

    fn count(&self, key: u32) -> u64 {
        match self.counts.lookup(&key.to_ne_bytes()) {
            Ok(Some(v)) => (v.chunks(self.counts.value_stride()))
                .map(|c| u64_at(c, 0))
                .sum(),
            _ => 0,
        }
    }
}

/// Where the programs read field `name` of `format`.
fn field(format: &EventFormat, name: &str) -> Result<Read> {
    let f = format.field(name).filter(|f| !f.data_loc);
    let read = f.and_then(|f| {
        Some(Read {
            off: i16::try_from(f.offset).ok()?,
            size: match f.size {
                1 => Size::B,
                2 => Size::H,
                4 => Size::W,
                8 => Size::DW,
                _ => return None,
            },
        })
    });
    read.ok_or_else(|| Error::Tracing {
        what: format!(
            "tracepoint {} has no integer field {name}: this kernel's format differs from what \
             the block programs read",
            format.name
        ),
        source: None,
    })
}

/// A record's event, or None if it is short or names no program of ours.
fn parse(r: &[u8]) -> Option<Event> {
    if r.len() < RECORD {
        return None;
    }
    let [a, b, c] = [24, 32, 40].map(|at| u64_at(r, at));
    let what = match u32_at(r, 20) {
        SOFTIRQ_ENTRY => What::SoftirqEntry { vec: a as u32 },
        SOFTIRQ_EXIT => What::SoftirqExit { vec: a as u32 },
        IRQ_ENTRY => What::IrqEntry { irq: a as i32 },
        IRQ_EXIT => What::IrqExit { irq: a as i32 },
        COMPLETE => What::BlockComplete {
            dev: a as u32,
            sector: b,
            sectors: c as u32,
        },
        _ => return None,
    };
    let ids = u64_at(r, 8);
    Some(Event {
        time: u64_at(r, 0),
        cpu: u32_at(r, 16),
        pid: (ids >> 32) as u32,
        tid: ids as u32,
        what,
    })
}

/// The program writing records of kind `what`: the values `fields` read (at most
/// [`FIELDS`]), only when the value `vector` reads is the `BLOCK` vector if given. Counts
/// the record written or lost. Returns 1: no one's perf events lose the hit.
fn program(what: u32, fields: &[Read], vector: Option<Read>) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.mov(Reg::R6, Reg::R1);
    if let Some(v) = vector {
        a.load(v.size, Reg::R0, Reg::R6, v.off).jmp_imm(
            Cond::Ne,
            Reg::R0,
            BLOCK_VECTOR as i32,
            out,
        );
    }
    a.call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R10, REC, Reg::R0)
        .call(Helper::GetCurrentPidTgid)
        .store(Size::DW, Reg::R10, REC + 8, Reg::R0)
        .call(Helper::GetSmpProcessorId)
        .store(Size::W, Reg::R10, REC + 16, Reg::R0)
        .store_imm(Size::W, Reg::R10, REC + 20, what as i32);
    for i in 0..FIELDS {
        let at = REC + 24 + 8 * i as i16;
        match fields.get(i) {
            Some(f) => {
                a.load(f.size, Reg::R0, Reg::R6, f.off)
                    .store(Size::DW, Reg::R10, at, Reg::R0)
            }
            None => a.store_imm(Size::DW, Reg::R10, at, 0),
        };
    }
    let output = CountedOutput {
        ring: RING,
        record: REC,
        len: RECORD as i32,
        counts: COUNTS,
        key: CKEY,
        written: 2 * what as i32,
        lost: 2 * what as i32 + 1,
    };
    output.emit(&mut a, out);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(what: u32, fields: [u64; 3]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend(1234u64.to_ne_bytes());
        r.extend((7u64 << 32 | 9).to_ne_bytes());
        r.extend(1u32.to_ne_bytes());
        r.extend(what.to_ne_bytes());
        for f in fields {
            r.extend(f.to_ne_bytes());
        }
        r
    }

    #[test]
    fn a_record_gives_its_event() {
        let e = parse(&record(COMPLETE, [0x700001, 2048, 8])).unwrap();
        assert_eq!((e.time, e.cpu, e.pid, e.tid), (1234, 1, 7, 9));
        assert_eq!(
            e.what,
            What::BlockComplete {
                dev: 0x700001,
                sector: 2048,
                sectors: 8
            }
        );
        let e = parse(&record(IRQ_EXIT, [u64::from(u32::MAX), 0, 0])).unwrap();
        assert_eq!(e.what, What::IrqExit { irq: -1 });
        assert_eq!(parse(&record(PROGRAMS, [0; 3])), None);
        assert_eq!(parse(&record(SOFTIRQ_ENTRY, [4, 0, 0])[..RECORD - 1]), None);
    }

    #[test]
    fn the_programs_are_the_same_bytes_on_every_build() {
        let complete = [
            Read {
                off: 8,
                size: Size::W,
            },
            Read {
                off: 16,
                size: Size::DW,
            },
            Read {
                off: 24,
                size: Size::W,
            },
        ];
        let got = [
            program(SOFTIRQ_ENTRY, &[arg(0)], Some(arg(0))).digest(),
            program(IRQ_ENTRY, &[arg(0)], None).digest(),
            program(COMPLETE, &complete, None).digest(),
        ];
        let want = [
            "35 insns 2071d1cf5b15fa76",
            "33 insns 90e93c883d24b8da",
            "35 insns 60c019febbf72a3c",
        ];
        assert_eq!(got, want.map(String::from), "{got:#?}");
    }
}
