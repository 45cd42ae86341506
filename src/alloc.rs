//! The global allocator: mimalloc, entered by its plain functions wherever they already
//! give the alignment asked for.
//!
//! The `mimalloc` crate's allocator passes every request to `mi_malloc_aligned`, whose
//! fast path only takes a block when the size class's page has a free one at the right
//! alignment; otherwise it over-allocates into the next size class (size + alignment − 1)
//! for every size that is not a power of two — so a 72-byte request whose page ran dry
//! takes an 80-byte block, and its own page is never refilled. Every mimalloc block is
//! word-aligned (block sizes are whole words, pages start 16-aligned), so alignments up to
//! a word go to `mi_malloc` / `mi_zalloc` / `mi_realloc`; larger ones keep the aligned
//! calls.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Alignments every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

pub struct Mimalloc;

// SAFETY: every call forwards to mimalloc, which returns null on failure and blocks of at
// least the requested size; a block is aligned to a word whatever its size (above), and
// larger alignments use the aligned entry points. `mi_free` takes blocks from any of them.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_malloc(layout.size()) as *mut u8
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_zalloc(layout.size()) as *mut u8
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// Turns transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` is set
/// (mimalloc's own switch; `1` keeps them). mimalloc asks the kernel for huge pages on its
/// arenas, so whichever thread first touches a fresh 2 MB region waits while the kernel
/// zeroes all of it — on the matching thread, a worker or the persister, many times a minute
/// while the heap grows (the wait is in docs/internals/performance.md). Without them the
/// same memory is backed 4 KB at a time, and those waits leave the open loop's tail. Call
/// it first thing in `main`: it applies to pages touched afterwards.
pub fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: PR_SET_THP_DISABLE takes integers only and sets a flag of this process's
    // memory map; an error (a kernel without it) leaves huge pages as they were.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process's flag is set (the kernel reports it). With mimalloc's switch set, its
    /// value decides and there is nothing of ours to check.
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_turned_off() {
        no_transparent_huge_pages();
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) }, 1);
        }
    }

    /// Every size class a small request can land in, at each alignment the plain calls
    /// serve and the next one up, fresh and grown: the pointer honours the layout.
    #[test]
    fn blocks_honour_their_alignment() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32] {
            for size in (1..=1100).step_by(3) {
                let layout = Layout::from_size_align(size, align).unwrap();
                // A few of each, so a size class's page hands out more than its first block.
                let blocks: Vec<*mut u8> = (0..4)
                    .map(|i| unsafe {
                        let p = if i % 2 == 0 { a.alloc(layout) } else { a.alloc_zeroed(layout) };
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "size {size} align {align}");
                        if i % 2 == 1 {
                            assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                        }
                        p.write_bytes(0xa5, size);
                        let q = a.realloc(p, layout, size * 2 + 5);
                        assert!(!q.is_null());
                        assert_eq!(q as usize % align, 0, "grown from {size}, align {align}");
                        assert!(std::slice::from_raw_parts(q, size).iter().all(|&b| b == 0xa5));
                        q
                    })
                    .collect();
                for p in blocks {
                    unsafe { a.dealloc(p, Layout::from_size_align(size * 2 + 5, align).unwrap()) };
                }
            }
        }
    }
}
