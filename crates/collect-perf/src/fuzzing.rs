//! Entry points for the fuzz targets in `fuzz/` (and their runs over fixtures as ordinary
//! tests): the collector's parsers of what the kernel hands it (perf records, taskstats
//! messages, `/proc` files, the kallsyms text) and of the files a profiled process chose (ELF
//! images and their `.eh_frame`), reachable with plain bytes. Not a stable API.

use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64};
use framehop::{FrameAddress, Module, Unwinder as _};

use crate::elf::ElfInfo;
use crate::recording::{ProcReading, Recording, StackStart, TaskExit, word_at};
use crate::unwind::{FhUnwinder, section_info};

/// Decodes `data` as a stream of perf records, each led by its `perf_event_header` (type,
/// misc, size), laid out as this crate's events make them (identifier 2: the BPF copier's
/// stack copies), into a recording. A header whose
/// size is under 8 bytes or past the end stops the stream, as it would stop the ring reader.
pub fn decode_records(data: &[u8]) -> Recording {
    // As a task-following run decodes them: MMAP2 records under the flag carry a build-id;
    // the main threads of pids 0 to 7 started their stacks at 0x7ffe_0100 (as a /proc
    // reading says), so their stack copies are cut there when they hold an argc.
    let mut rec = Recording {
        mmap_build_ids: true,
        // Samples of identifier 2 are stack copies of the BPF copier, each for the sample of
        // its CPU that follows.
        copy_ids: vec![2],
        // Samples without a user callchain have it walked over their copy, as in such runs.
        user_chains_from_copies: true,
        ..Recording::default()
    };
    for pid in 0..8 {
        let start = StackStart {
            start: 0x7ffe_0100,
            since: 0,
        };
        rec.stack_starts.insert(pid, start);
    }
    let mut rest = data;
    while let Some(size) = rest.get(6..8) {
        let size = usize::from(u16::from_ne_bytes([size[0], size[1]]));
        if size < 8 || size > rest.len() {
            break;
        }
        rec.push_raw(&rest[..size]);
        rest = &rest[size..];
    }
    rec
}

/// Parses `image` as the collector reads an object it unwinds through, and unwinds from `ip`,
/// `sp` and `bp` over `stack` (whose first byte is at `sp`) with its `.eh_frame`, the image
/// mapped at `start` from file offset 0. Returns the frames found (at most 256), or None if
/// `image` is not a 64-bit ELF file the collector would use.
pub fn unwind_with_image(
    image: &[u8],
    start: u64,
    (ip, sp, bp): (u64, u64, u64),
    stack: &[u8],
) -> Option<Vec<u64>> {
    let elf = Arc::new(ElfInfo::parse(image)?);
    let end = start.checked_add(image.len() as u64)?.max(start + 1);
    let bias = elf.bias(start, end, 0)?;
    let mut unwinder = FhUnwinder::new();
    unwinder.add_module(Module::new(
        "fuzz".to_owned(),
        start..end,
        bias,
        section_info(&elf),
    ));
    let mut cache = CacheX86_64::new();
    let mut read = |addr: u64| word_at(stack, sp, addr).ok_or(());
    let mut regs = UnwindRegsX86_64::new(ip, sp, bp);
    let mut address = FrameAddress::InstructionPointer(ip);
    let mut frames = vec![ip];
    while frames.len() < 256 {
        match unwinder.unwind_frame(address, &mut regs, &mut cache, &mut read) {
            Ok(Some(ra)) => {
                frames.push(ra);
                match FrameAddress::from_return_address(ra) {
                    Some(next) => address = next,
                    None => break,
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    Some(frames)
}

/// What the collector keeps of a process from the texts of its `stat`, `status`, `io` and
/// `schedstat` files and the bytes of its `cmdline`; None if `stat` has no `(comm)`.
pub fn proc_reading(
    stat: &str,
    status: &str,
    io: &str,
    schedstat: &str,
    cmdline: &[u8],
) -> Option<ProcReading> {
    let counters = crate::procfs::parse_counters(
        stat.to_owned(),
        status.to_owned(),
        io.to_owned(),
        schedstat.to_owned(),
    )?;
    crate::procfs::parse_reading(1, 0, counters, cmdline)
}

/// The executable mappings of the text of a `/proc/PID/maps` file, as the collector records
/// them for a process it attaches to.
pub fn proc_maps(maps: &str) -> Vec<crate::recording::SideBand> {
    crate::sampler::parse_maps(1, maps)
}

/// The exit records of one taskstats netlink datagram.
pub fn taskstats_datagram(data: &[u8]) -> Vec<TaskExit> {
    let mut out = Vec::new();
    crate::taskstats::parse_datagram(data, 0, &mut out);
    out
}
