//! Shared by the workspace's integration tests.

/// The one insta configuration: every snapshot lives in the top-level
/// `snapshots/` folder, without the assertion's expression in its header.
#[allow(dead_code)]
pub fn insta_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.set_sort_maps(true);
    s
}
