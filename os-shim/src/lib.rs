//! The operating system as MAGIC sees it: processes and PIDs, page tables,
//! address-space regions and the shadow mapping, translation changes, and the
//! hold-off / invalidation / software-TLB techniques.
//!
//! Not yet built: this crate holds its place in the workspace until the
//! user-level messaging work lands (see ARCHITECTURE.md).
