//! The directory-based cache-coherence protocol on MAGIC and the coherence
//! modes for message data (none, local, global).
//!
//! Not yet built: this crate holds its place in the workspace until the
//! coherence work lands (see ARCHITECTURE.md).
