//! Cache hints for the event loop. A machine of thousands of nodes touches a
//! different node's state at almost every dispatch; asking for what the next
//! few nodes' dispatches will read while the current one runs hides most of
//! the memory latency. A hint changes no result.

/// Ask the CPU to bring the cache line holding `x` in ahead of its use.
#[inline(always)]
pub(crate) fn prefetch<T>(x: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, whatever the
    // address, and reads nothing the program sees.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(x.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Ask for the lines of the first `len` bytes of element `i` of `xs`: one
/// hint a line from the element's start, and, unless the type is aligned
/// to a line (so the element starts one), one for the last byte, as a value
/// not aligned to a line may span one line more than its size needs. With
/// `len` a constant the loop unrolls to that many prefetches. A hint only:
/// the addresses are made by wrapping arithmetic, so an `i` past the end
/// asks for some other address, harmlessly, and costs no bounds check.
#[inline(always)]
pub(crate) fn prefetch_part<T>(xs: &[T], i: usize, len: usize) {
    let p = xs.as_ptr().wrapping_add(i).cast::<u8>();
    let mut off = 0;
    while off < len {
        prefetch(p.wrapping_add(off));
        off += 64;
    }
    if align_of::<T>() < 64 && len > 0 {
        prefetch(p.wrapping_add(len - 1));
    }
}

/// Ask for the lines of element `i` of `xs` (a hint only, as
/// [`prefetch_part`]).
#[inline(always)]
pub(crate) fn prefetch_elem<T>(xs: &[T], i: usize) {
    prefetch_part(xs, i, size_of::<T>());
}
