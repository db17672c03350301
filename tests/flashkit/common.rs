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

/// Whether plots can lay out their labels here: a TrueType font where
/// `flashkit plot` looks for one.
#[allow(dead_code)]
pub fn have_font() -> bool {
    std::env::var("FLASHKIT_FONT").is_ok()
        || [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
            "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        ]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
}
