//! Errors of the probes: bad arguments, pinning failures, failed self-validation.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// An argument is out of range; the message says which and what is allowed.
    InvalidArgument(String),
    /// The thread could not be pinned to the requested core.
    Affinity(String),
    /// Memory for the probe could not be allocated.
    Allocation(String),
    /// The probe's own check of its result failed: the number must not be used.
    Validation(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            ProbeError::Affinity(m) => write!(f, "cannot pin to core: {m}"),
            ProbeError::Allocation(m) => write!(f, "cannot allocate probe memory: {m}"),
            ProbeError::Validation(m) => write!(f, "self-validation failed: {m}"),
        }
    }
}

impl std::error::Error for ProbeError {}
