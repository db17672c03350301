//! Cache hints for the event loop. A machine of thousands of nodes touches a
//! different node's state at almost every event; asking for the next few
//! nodes' lines while the current event runs hides most of the memory
//! latency. A hint changes no result.

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

/// Ask for every cache line `x` spans (a value not aligned to a line may
/// span one more than its size needs).
#[inline(always)]
pub(crate) fn prefetch_value<T>(x: &T) {
    let p = (x as *const T).cast::<u8>();
    let lines = (p as usize % 64 + size_of::<T>().max(1)).div_ceil(64);
    for i in 0..lines {
        prefetch(p.wrapping_add(i * 64));
    }
}
