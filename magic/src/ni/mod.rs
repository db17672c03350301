//! The comparison platforms' network interfaces: plain hardware (FIFOs,
//! status registers, networks) that software on the compute processor drives.

pub mod cm5;
pub mod sp;
