//! The mmap ring buffer of one perf event: head/tail protocol and wraparound-split records.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;

/// A mapped ring buffer: one metadata page followed by `2^n` data pages.
#[derive(Debug)]
pub(crate) struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    /// Holds a record whose body wraps past the end of the buffer.
    scratch: Vec<u8>,
}

// Safety: the mapping is owned by this value and only accessed through `&mut self`.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `data_pages` (a power of two) data pages of `fd`'s buffer.
    pub(crate) fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let map_len = (data_pages + 1) * page;
        // Safety: a fresh shared mapping of a perf fd; the kernel validates the size.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        let meta = base.as_ptr().cast::<perf_event_mmap_page>();
        // Safety: page 0 is the kernel's `perf_event_mmap_page`; these two fields are fixed after
        // mmap. Old kernels leave them 0, in which case data starts at page 1.
        let (off, size) = unsafe {
            (
                std::ptr::addr_of!((*meta).data_offset).read_volatile(),
                std::ptr::addr_of!((*meta).data_size).read_volatile(),
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, data_pages * page)
        } else {
            (off as usize, size as usize)
        };
        Ok(Ring {
            base,
            map_len,
            data_offset,
            data_size,
            scratch: Vec::new(),
        })
    }

    fn head(&self) -> &AtomicU64 {
        let meta = self.base.as_ptr().cast::<perf_event_mmap_page>();
        // Safety: `data_head` is an aligned u64 in the mapped metadata page that lives as long
        // as `self`; the kernel writes it concurrently, hence the atomic view.
        unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*meta).data_head)) }
    }

    fn tail(&self) -> &AtomicU64 {
        let meta = self.base.as_ptr().cast::<perf_event_mmap_page>();
        // Safety: as for `head`; the kernel reads `data_tail`, only we write it.
        unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*meta).data_tail)) }
    }

    /// Calls `f` with every complete record between tail and head, then releases the space.
    ///
    /// Returns the number of bytes consumed.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        // Acquire pairs with the kernel's store of data_head: record bytes below head are visible.
        let head = self.head().load(Ordering::Acquire);
        let start = self.tail().load(Ordering::Relaxed);
        let mut tail = start;
        let size = self.data_size as u64;
        // Safety: the data area lies inside the mapping.
        let data = unsafe { self.base.as_ptr().add(self.data_offset) };
        while head.saturating_sub(tail) >= 8 {
            let off = (tail % size) as usize;
            // Safety: headers are 8-byte aligned and 8 bytes long, so one never wraps; the bytes
            // between tail and head are not written by the kernel until we advance tail.
            let hdr = unsafe { std::slice::from_raw_parts(data.add(off), 8) };
            let len = u16::from_ne_bytes([hdr[6], hdr[7]]) as usize;
            if len < 8 || tail + len as u64 > head {
                // A corrupt or partial record: skip everything we were given.
                tail = head;
                break;
            }
            if off + len <= self.data_size {
                // Safety: as above, the record lies in [tail, head) and does not wrap.
                f(unsafe { std::slice::from_raw_parts(data.add(off), len) });
            } else {
                let first = self.data_size - off;
                self.scratch.clear();
                // Safety: the record's two parts are [off, end) and [0, len - first), both in
                // the data area and both in [tail, head).
                unsafe {
                    self.scratch
                        .extend_from_slice(std::slice::from_raw_parts(data.add(off), first));
                    self.scratch
                        .extend_from_slice(std::slice::from_raw_parts(data, len - first));
                }
                f(&self.scratch);
            }
            tail += len as u64;
        }
        // Release: our reads of the records happen before the kernel may overwrite them.
        self.tail().store(tail, Ordering::Release);
        tail - start
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Safety: unmapping exactly the mapping created in `map`; nothing borrows it any more.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // Safety: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring over anonymous memory laid out like the kernel's, so wraparound can be tested.
    fn fake_ring(data_pages: usize) -> Ring {
        let page = page_size();
        let map_len = (data_pages + 1) * page;
        // Safety: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Ring {
            base: NonNull::new(p.cast()).expect("non-null"),
            map_len,
            data_offset: page,
            data_size: data_pages * page,
            scratch: Vec::new(),
        }
    }

    /// Writes a record of `len` bytes (header + filler byte `fill`) at logical position `pos`.
    fn put(ring: &Ring, pos: u64, len: u16, fill: u8) {
        let mut rec = vec![fill; len as usize];
        rec[..4].copy_from_slice(&9u32.to_ne_bytes());
        rec[4..6].copy_from_slice(&0u16.to_ne_bytes());
        rec[6..8].copy_from_slice(&len.to_ne_bytes());
        for (i, b) in rec.iter().enumerate() {
            let off = ((pos + i as u64) % ring.data_size as u64) as usize;
            // Safety: `off` is inside the data area of the test mapping.
            unsafe { *ring.base.as_ptr().add(ring.data_offset + off) = *b };
        }
    }

    #[test]
    fn records_split_by_the_end_of_the_buffer_are_reassembled() {
        let mut ring = fake_ring(1);
        let size = ring.data_size as u64;
        // Start near the end so the second record wraps.
        let start = size - 48;
        ring.tail().store(start, Ordering::Relaxed);
        put(&ring, start, 32, 0xaa);
        put(&ring, start + 32, 64, 0xbb);
        put(&ring, start + 96, 16, 0xcc);
        ring.head().store(start + 112, Ordering::Release);
        let mut seen = Vec::new();
        let n = ring.drain(|r| seen.push((r.len(), r[8], r[r.len() - 1])));
        assert_eq!(n, 112);
        assert_eq!(
            seen,
            vec![(32, 0xaa, 0xaa), (64, 0xbb, 0xbb), (16, 0xcc, 0xcc)]
        );
        assert_eq!(ring.tail().load(Ordering::Relaxed), start + 112);
        // Nothing new: nothing delivered.
        assert_eq!(ring.drain(|_| panic!("no records expected")), 0);
    }
}
