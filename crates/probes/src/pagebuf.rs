//! Page-aligned anonymous memory with an explicit transparent-huge-page policy, so
//! that TLB effects do not depend on the system's THP default.
use crate::ProbeError;
use std::ptr::NonNull;

/// Which page size the kernel should back the buffer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// Base pages only (MADV_NOHUGEPAGE): the TLB sees every 4 KiB page.
    Base,
    /// Ask for transparent huge pages (MADV_HUGEPAGE); the kernel may still refuse.
    Huge,
}

pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// The buffer is plain memory owned by this value.
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// `len` bytes (rounded up to whole pages), zero-filled, every page touched.
    pub fn new(len: usize, pages: Pages) -> Result<PageBuf, ProbeError> {
        let page = page_size();
        let len = len.max(1).div_ceil(page) * page;
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(ProbeError::Allocation(format!("mmap of {len} bytes: {}", std::io::Error::last_os_error())));
        }
        let advice = match pages {
            Pages::Base => libc::MADV_NOHUGEPAGE,
            Pages::Huge => libc::MADV_HUGEPAGE,
        };
        // Advice is best effort: a kernel without THP support rejects it harmlessly.
        unsafe { libc::madvise(p, len, advice) };
        let buf = PageBuf { ptr: NonNull::new(p as *mut u8).expect("mmap returned null"), len };
        // Fault every page in now, so first-touch costs are not measured.
        for off in (0..len).step_by(page) {
            unsafe { buf.ptr.as_ptr().add(off).write_volatile(0) };
        }
        Ok(buf)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// The base page size in bytes.
pub fn page_size() -> usize {
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}
