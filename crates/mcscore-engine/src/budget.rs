//! A bound on the memory one thread allocates: what keeps a chat template
//! from taking the machine's memory while it renders.
//!
//! minijinja's fuel bounds the instructions a template runs, not the memory
//! they take: forty doublings of a string in a loop are a few hundred
//! instructions and a terabyte, and many filters (`center`, `replace`,
//! `join`) can build a string of any size in one step. A template embedded in
//! a downloaded GGUF is untrusted input, so rendering runs on a thread whose
//! allocations are counted by [`BoundedAlloc`], the process's allocator.
//!
//! An allocation cannot fail gracefully in Rust (a null pointer aborts the
//! process), so a thread that would pass its bound is stopped instead: the
//! allocation is never made, the thread's [`Overrun`] flag is raised and the
//! thread sleeps for the rest of the process, holding at most its bound. The
//! thread that waits for it sees the flag and reports the error; a front end
//! then exits. Without [`BoundedAlloc`] installed (a library user's own
//! allocator) nothing is counted and templates render unbounded, as
//! [`installed`] says.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The system allocator, counting the allocations of threads that run
/// [`bounded`]: install it as the binary's `#[global_allocator]`.
pub struct BoundedAlloc;

static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Bytes this thread may hold live; `usize::MAX` where it is not bounded.
    static LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Bytes this thread allocated less those it freed since its bound began
    /// (negative where it frees what it held before).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The flag [`bounded`]'s caller watches.
    static FLAG: Cell<*const AtomicBool> = const { Cell::new(std::ptr::null()) };
}

/// Whether [`BoundedAlloc`] is this process's allocator, so that [`bounded`]
/// bounds anything.
pub fn installed() -> bool {
    // Any allocation through it sets the flag; make one.
    drop(Box::new(0u8));
    INSTALLED.load(Ordering::Relaxed)
}

/// Raised on a thread whose allocations passed its bound; that thread sleeps
/// from then on.
#[derive(Clone, Default)]
pub struct Overrun(Arc<AtomicBool>);

impl Overrun {
    /// A flag not yet raised.
    pub fn new() -> Overrun {
        Overrun::default()
    }

    /// Whether the thread passed its bound.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Runs `work` on this thread with at most `limit` bytes allocated and not
/// yet freed; past that, `overrun` is raised and the thread never returns.
/// Call it only on a thread of its own, whose waiter watches `overrun`.
pub fn bounded<T>(limit: usize, overrun: &Overrun, work: impl FnOnce() -> T) -> T {
    let flag: &AtomicBool = &overrun.0;
    FLAG.with(|f| f.set(flag));
    LIVE.with(|l| l.set(0));
    LIMIT.with(|l| l.set(limit));
    let result = work();
    LIMIT.with(|l| l.set(usize::MAX));
    FLAG.with(|f| f.set(std::ptr::null()));
    result
}

/// Counts `bytes` more (or fewer) on this thread; `false` where that passes
/// its bound, after raising its flag.
fn admit(bytes: isize) -> bool {
    let Ok(limit) = LIMIT.try_with(Cell::get) else { return true };
    if limit == usize::MAX {
        return true;
    }
    let live = LIVE.with(Cell::get).saturating_add(bytes);
    if live > 0 && live as usize > limit {
        return false;
    }
    LIVE.with(|l| l.set(live));
    true
}

/// Raises this thread's flag and sleeps forever: the allocation that would
/// pass the bound is never made, and nothing this thread holds is touched again.
fn stop() -> ! {
    let flag = FLAG.with(Cell::get);
    #[allow(unsafe_code)]
    // SAFETY: `bounded` set the pointer from a reference to the flag its
    // caller keeps alive (the `Overrun` it borrows) for as long as the bound
    // holds, and this thread is inside that call: it never returns from here.
    if let Some(flag) = unsafe { flag.as_ref() } {
        flag.store(true, Ordering::SeqCst);
    }
    loop {
        // nanosleep allocates nothing.
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

fn size(layout: Layout) -> isize {
    isize::try_from(layout.size()).unwrap_or(isize::MAX)
}

#[allow(unsafe_code)]
// SAFETY: every call is passed to the system allocator unchanged; counting
// only reads and writes this thread's own cells, which are const-initialised
// and have no destructor, so they are usable at any point of a thread's life
// and never allocate.
unsafe impl GlobalAlloc for BoundedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        if !admit(size(layout)) {
            stop();
        }
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !admit(size(layout)) {
            stop();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        admit(-size(layout));
        // SAFETY: `ptr` was allocated by this allocator, that is by the system's, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = isize::try_from(new_size).unwrap_or(isize::MAX).saturating_sub(size(layout));
        if !admit(grown) {
            stop();
        }
        // SAFETY: as for `dealloc`, with the caller's contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
