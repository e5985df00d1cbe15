//! Pinning the calling thread to one core (sched_setaffinity), restored on drop.
use crate::ProbeError;
use std::mem;

/// The cores the calling thread may run on, ascending.
pub fn allowed_cores() -> Result<Vec<usize>, ProbeError> {
    let set = get_mask()?;
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// While alive, the calling thread runs only on `core`; dropping it restores the
/// previous affinity mask.
pub struct PinGuard {
    previous: libc::cpu_set_t,
    core: usize,
}

impl PinGuard {
    pub fn core(&self) -> usize {
        self.core
    }
}

/// Pins the calling thread to `core`, which must be in its current affinity mask.
pub fn pin_current_thread(core: usize) -> Result<PinGuard, ProbeError> {
    let previous = get_mask()?;
    if core >= libc::CPU_SETSIZE as usize || !unsafe { libc::CPU_ISSET(core, &previous) } {
        let allowed = allowed_cores()?;
        return Err(ProbeError::Affinity(format!(
            "core {core} is not available to this process (allowed: {})",
            format_list(&allowed)
        )));
    }
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    unsafe { libc::CPU_SET(core, &mut set) };
    set_mask(&set)?;
    Ok(PinGuard { previous, core })
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let _ = set_mask(&self.previous);
    }
}

/// The core the calling thread is running on right now.
pub fn current_core() -> Option<usize> {
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

fn get_mask() -> Result<libc::cpu_set_t, ProbeError> {
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(ProbeError::Affinity(format!("sched_getaffinity: {}", std::io::Error::last_os_error())));
    }
    Ok(set)
}

fn set_mask(set: &libc::cpu_set_t) -> Result<(), ProbeError> {
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), set) };
    if rc != 0 {
        return Err(ProbeError::Affinity(format!("sched_setaffinity: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// "0-3,6" style list of ascending integers.
fn format_list(v: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        while i + 1 < v.len() && v[i + 1] == v[i] + 1 {
            i += 1;
        }
        out.push(if v[i] == start { start.to_string() } else { format!("{start}-{}", v[i]) });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_and_restores() {
        let before = allowed_cores().unwrap();
        assert!(!before.is_empty());
        let target = *before.last().unwrap();
        {
            let g = pin_current_thread(target).unwrap();
            assert_eq!(g.core(), target);
            assert_eq!(allowed_cores().unwrap(), vec![target]);
            assert_eq!(current_core(), Some(target));
        }
        assert_eq!(allowed_cores().unwrap(), before);
    }

    #[test]
    fn rejects_unavailable_core() {
        let err = pin_current_thread(100_000).err().unwrap();
        assert!(err.to_string().contains("core 100000 is not available"), "{err}");
    }

    #[test]
    fn formats_ranges() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_list(&[5]), "5");
    }
}
