//! Platform probes: small, self-validating microbenchmarks that characterise a machine
//! for the cross-platform performance model (from the router performance-index
//! experiment).
//!
//! * [`cpu`]: a single-core integer workload (linked list, small matrices, a state
//!   machine, CRC) reporting iterations per second, with a checksum that validates
//!   every iteration's result.
//! * [`memmove`]: the mmbm copy cases (arena of 8192 blocks of 4096+64 bytes walked as
//!   a ring with step 5, source and destination on opposite sides), in MiB/s, with
//!   the copied bytes verified afterwards; plus a sweep over copy size × buffer count.
//! * [`latency`]: a dependent pointer chase in ns per access over working sets of
//!   growing size, in page-local and fully random order.
//! * [`affinity`]: pinning the calling thread to one core for the duration of a probe.
//!
//! The crate knows nothing of Python; `crates/py` exposes it as `perflab._native`.

pub mod affinity;
pub mod cpu;
pub mod error;
pub mod latency;
pub mod memmove;
pub mod pagebuf;
mod rng;
mod timing;

pub use error::ProbeError;
