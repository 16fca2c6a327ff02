//! The consumer side of a BPF ring buffer map (`BPF_MAP_TYPE_RINGBUF`), read through mmap as
//! the kernel's protocol has it (`kernel/bpf/ringbuf.c`): a writable consumer page holding
//! `consumer_pos`, then a read-only producer page holding `producer_pos`, then the data pages
//! mapped twice in a row so a record that wraps is still contiguous. Each record starts with
//! an 8-byte header whose first word is its length with a busy bit (still being written) and
//! a discard bit; positions only grow, records are 8-byte aligned.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::insn::{Alu, Asm, Cond, Helper, Label, MapSlot, Reg, Size};
use super::map::{Map, MapKind};
use crate::{Error, Result};

const BUSY_BIT: u32 = 1 << 31;
const DISCARD_BIT: u32 = 1 << 30;
const HEADER: u64 = 8;

/// A program's write of one record to a ring buffer, counted in a per-CPU array: written, or
/// lost when the ring had no room.
#[derive(Debug, Clone, Copy)]
pub struct CountedOutput {
    /// The ring buffer's slot.
    pub ring: MapSlot,
    /// Where the record is: an offset from R10.
    pub record: i16,
    /// Its bytes.
    pub len: i32,
    /// The per-CPU array's slot (u32 keys, u64 values).
    pub counts: MapSlot,
    /// Where the counter's key is built: an offset from R10.
    pub key: i16,
    /// The counter of records written.
    pub written: i32,
    /// The counter of records lost.
    pub lost: i32,
}

impl CountedOutput {
    /// Emits the write and the count; jumps to `out` if the counter is missing, else goes on
    /// after it. Clobbers R0 to R5.
    pub fn emit(&self, a: &mut Asm, out: Label) {
        let counted = a.label();
        a.ld_map(Reg::R1, self.ring)
            .mov(Reg::R2, Reg::R10)
            .alu_imm(Alu::Add, Reg::R2, i32::from(self.record))
            .mov_imm(Reg::R3, self.len)
            .mov_imm(Reg::R4, 0)
            .call(Helper::RingbufOutput)
            .store_imm(Size::W, Reg::R10, self.key, self.written)
            .jmp_imm(Cond::Eq, Reg::R0, 0, counted)
            .store_imm(Size::W, Reg::R10, self.key, self.lost)
            .bind(counted)
            .count_at(self.counts, self.key, out);
    }
}

/// A ring buffer map and its two mappings.
#[derive(Debug)]
pub struct RingBuf {
    map: Map,
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
}

impl RingBuf {
    /// A ring buffer of `bytes` (a power of two, at least a page) named `name`.
    ///
    /// Returns an error if the kernel refuses the map or its mapping.
    pub fn create(name: &str, bytes: u32) -> Result<RingBuf> {
        let map = Map::create(MapKind::RingBuf, name, 0, 0, bytes)?;
        // Safety: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let size = bytes as usize;
        let fd = map.fd().as_raw_fd();
        let mapped = |len: usize, prot: i32, off: usize| -> io::Result<*mut u8> {
            // Safety: a fresh shared mapping of the map's fd at the offsets the kernel
            // defines for ring buffers; nothing else aliases it in this process.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd,
                    off as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            Ok(p.cast())
        };
        let consumer = mapped(page, libc::PROT_READ | libc::PROT_WRITE, 0)
            .map_err(|e| Error::io("cannot map a BPF ring buffer's consumer page", e))?;
        let producer = match mapped(page + 2 * size, libc::PROT_READ, page) {
            Ok(p) => p,
            Err(e) => {
                // Safety: `consumer` was mapped above with this length.
                unsafe { libc::munmap(consumer.cast(), page) };
                return Err(Error::io("cannot map a BPF ring buffer's data pages", e));
            }
        };
        Ok(RingBuf {
            map,
            consumer,
            producer,
            page,
            size,
        })
    }

    /// The map, for programs to write into.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Hands every complete record to `f`, in order, and frees its space; stops at a record
    /// still being written. Returns the number of records read (discarded ones not counted).
    pub fn read(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        // Safety: both positions are 8-byte aligned words at the start of their pages, which
        // stay mapped while `self` lives; the kernel writes `producer_pos` and reads
        // `consumer_pos` concurrently, hence the atomics.
        let (cons_pos, prod_pos) = unsafe {
            (
                &*self.consumer.cast::<AtomicU64>(),
                &*self.producer.cast::<AtomicU64>(),
            )
        };
        let mask = self.size as u64 - 1;
        let mut cons = cons_pos.load(Ordering::Acquire);
        let mut n = 0;
        loop {
            let prod = prod_pos.load(Ordering::Acquire);
            if cons >= prod {
                break;
            }
            let at = self.page + (cons & mask) as usize;
            // Safety: `at` is inside the first copy of the data pages; the header is 8-byte
            // aligned and its length word is written by the kernel with release semantics.
            let len_word = unsafe { &*self.producer.add(at).cast::<AtomicU32>() };
            let len = len_word.load(Ordering::Acquire);
            if len & BUSY_BIT != 0 {
                break;
            }
            let body = (len & !(BUSY_BIT | DISCARD_BIT)) as usize;
            if len & DISCARD_BIT == 0 && body <= self.size {
                // Safety: the record's bytes follow its header and, the data being mapped
                // twice, are contiguous even when they wrap; `body` is within the ring.
                let data = unsafe {
                    std::slice::from_raw_parts(self.producer.add(at + HEADER as usize), body)
                };
                f(data);
                n += 1;
            }
            cons += (body as u64 + HEADER).next_multiple_of(8);
            cons_pos.store(cons, Ordering::Release);
        }
        n
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // Safety: both were mapped in `create` with these lengths and are unmapped once.
        unsafe {
            libc::munmap(self.producer.cast(), self.page + 2 * self.size);
            libc::munmap(self.consumer.cast(), self.page);
        }
    }
}

// Safety: the mappings belong to this value alone and are only read through `&mut self`.
unsafe impl Send for RingBuf {}
