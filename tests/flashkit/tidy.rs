//! The structural rules the code keeps (ARCHITECTURE.md, "Rules"): no
//! import circle between the files of a crate; protocol code reads no
//! payload by position and passes no number to `instr`/`bundles`; no two
//! public types share the names `Costs` or `Op`; few integration test files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The crates' source folders.
const CRATES: [&str; 6] = [
    "magic/src",
    "coherence/src",
    "os-shim/src",
    "protocols/src",
    "kit/src",
    "src",
];

/// Source with comments removed (line comments and doc comments), so prose
/// that mentions a pattern does not trip a rule.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A file's module path within its crate: `transfer/conn.rs` is
/// `["transfer", "conn"]`, `transfer/mod.rs` and `lib.rs` their folder's.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths a `use` tree names, with braces expanded.
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand(&tree, "", &mut out);
    out
}

fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    match tree.find('{') {
        None => out.push(format!("{prefix}{tree}")),
        Some(i) => {
            let head = &tree[..i];
            let inner = &tree[i + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[start..j], &format!("{prefix}{head}"), out);
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            if start < inner.len() {
                expand(&inner[start..], &format!("{prefix}{head}"), out);
            }
        }
    }
}

/// Every `crate::`, `super::` and `self::` path a file's code names.
fn paths_named(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` statements, braces and all.
    for stmt in code.split(';') {
        let s = stmt.trim_start();
        let s = s.strip_prefix("pub(crate) ").unwrap_or(s);
        let s = s.strip_prefix("pub(super) ").unwrap_or(s);
        let s = s.strip_prefix("pub ").unwrap_or(s);
        if let Some(tree) = s.strip_prefix("use ") {
            out.extend(expand_use(tree));
        }
    }
    // Paths written inline.
    let bytes = code.as_bytes();
    for key in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(key) {
            let at = from + i;
            from = at + key.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            out.push(code[at..end].to_string());
        }
    }
    out
}

/// Resolve a path named in module `here` to the module path it starts from.
fn absolute(here: &[String], is_mod_file: bool, path: &str) -> Option<Vec<String>> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segs.first().copied() {
        Some("crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some("super") | Some("self") => {
            // A file `a/b.rs` is module a::b; `super` is a. A `mod.rs` file
            // is its folder's module.
            let mut m = here.to_vec();
            let _ = is_mod_file;
            while let Some(&s) = segs.first() {
                match s {
                    "super" => {
                        m.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                segs.remove(0);
            }
            m
        }
        _ => return None,
    };
    base.extend(segs.iter().map(|s| s.to_string()));
    Some(base)
}

/// The file a module path lands in: the longest prefix that is a file's
/// module, following that module's re-export of the next name.
fn resolve<'m>(
    modules: &'m BTreeMap<Vec<String>, String>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    abs: Vec<String>,
    hops: u32,
) -> Option<(usize, &'m String)> {
    let (k, file) = (0..=abs.len())
        .rev()
        .find_map(|k| modules.get(&abs[..k]).map(|t| (k, t)))?;
    if hops > 0 && k < abs.len() {
        // Only a module's re-export of its own descendants is seen through:
        // a file naming what a sibling re-exports depends on the sibling.
        if let Some(to) = reexports.get(&abs[..k]).and_then(|r| r.get(&abs[k])) {
            if to != &abs && to.len() > k && to[..k] == abs[..k] {
                if let Some(found) = resolve(modules, reexports, to.clone(), hops - 1) {
                    return Some(found);
                }
            }
        }
    }
    Some((k, file))
}

/// Import circles between the files of the crate in `src`.
fn circles(src: &Path) -> Vec<Vec<String>> {
    let files = rust_files(src);
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| {
            (
                module_of(src, f),
                f.strip_prefix(root()).unwrap_or(f).display().to_string(),
            )
        })
        .collect();
    // What each module re-exports (`pub use x::Y;`): name -> where it is from.
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for f in &files {
        let here = module_of(src, f);
        let is_mod = f.file_name().and_then(|n| n.to_str()) == Some("mod.rs");
        let code = code_of(&fs::read_to_string(f).unwrap_or_default());
        for stmt in code.split(';') {
            let Some(tree) = stmt.trim_start().strip_prefix("pub use ") else {
                continue;
            };
            for p in expand_use(tree) {
                // `pub use child::X` in a mod file names a child module.
                let p = if p.starts_with("crate::")
                    || p.starts_with("super::")
                    || p.starts_with("self::")
                {
                    p
                } else {
                    format!("self::{p}")
                };
                if let Some(abs) = absolute(&here, is_mod, &p) {
                    if let Some(last) = abs.last() {
                        reexports
                            .entry(here.clone())
                            .or_default()
                            .insert(last.clone(), abs.clone());
                    }
                }
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let here = module_of(src, f);
        let name = &modules[&here];
        let is_mod = matches!(
            f.file_name().and_then(|n| n.to_str()),
            Some("mod.rs" | "lib.rs" | "main.rs")
        );
        let code = code_of(&fs::read_to_string(f).unwrap_or_default());
        for p in paths_named(&code) {
            let Some(abs) = absolute(&here, is_mod, &p) else {
                continue;
            };
            let Some((k, target)) = resolve(&modules, &reexports, abs.clone(), 4) else {
                continue;
            };
            // A module owns its children: a parent naming its own child
            // (declaring it, re-exporting from it) is not an import.
            let child_of_here = k > here.len() && abs[..here.len()] == here[..];
            if target != name && !child_of_here {
                edges
                    .entry(name.clone())
                    .or_default()
                    .insert(target.clone());
            }
        }
    }
    // Strongly connected components (Tarjan).
    let nodes: Vec<String> = modules.values().cloned().collect();
    let mut index = BTreeMap::new();
    let mut low = BTreeMap::new();
    let mut on = BTreeSet::new();
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    #[allow(clippy::too_many_arguments)]
    fn visit(
        v: &String,
        edges: &BTreeMap<String, BTreeSet<String>>,
        index: &mut BTreeMap<String, usize>,
        low: &mut BTreeMap<String, usize>,
        on: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
        next: &mut usize,
        out: &mut Vec<Vec<String>>,
    ) {
        index.insert(v.clone(), *next);
        low.insert(v.clone(), *next);
        *next += 1;
        stack.push(v.clone());
        on.insert(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            if !index.contains_key(w) {
                visit(w, edges, index, low, on, stack, next, out);
                let l = low[v].min(low[w]);
                low.insert(v.clone(), l);
            } else if on.contains(w) {
                let l = low[v].min(index[w]);
                low.insert(v.clone(), l);
            }
        }
        if low[v] == index[v] {
            let mut comp = Vec::new();
            while let Some(w) = stack.pop() {
                on.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                out.push(comp);
            }
        }
    }
    for v in &nodes {
        if !index.contains_key(v) {
            visit(
                v, &edges, &mut index, &mut low, &mut on, &mut stack, &mut next, &mut out,
            );
        }
    }
    out
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let mut found = Vec::new();
    for c in CRATES {
        for circle in circles(&root().join(c)) {
            found.push(circle.join(" <-> "));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_check_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("flashkit-tidy-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("t")).unwrap();
    fs::write(dir.join("lib.rs"), "mod a;\nmod t;\n").unwrap();
    fs::write(dir.join("a.rs"), "use crate::t::b::Thing;\n").unwrap();
    fs::write(dir.join("t/mod.rs"), "pub mod b;\npub use b::Thing;\n").unwrap();
    fs::write(
        dir.join("t/b.rs"),
        "pub struct Thing;\nfn f() { crate::a::g(); }\n",
    )
    .unwrap();
    let found = circles(&dir);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].len(), 2);
}

/// A circle closed by a path written outside any `use` line, through a
/// sibling's re-export (a field typed `check::Bug` where `check` re-exports
/// the `Bug` defined beside the field) is still a circle.
#[test]
fn the_circle_check_sees_paths_outside_use_lines() {
    let dir = std::env::temp_dir().join(format!("flashkit-tidy-inline-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("lib.rs"), "pub mod check;\npub mod protocol;\n").unwrap();
    fs::write(
        dir.join("protocol.rs"),
        "pub enum Bug { A }\npub struct Params {\n    pub inject: Option<crate::check::Bug>,\n}\n",
    )
    .unwrap();
    fs::write(
        dir.join("check.rs"),
        "pub use crate::protocol::Bug;\npub fn run(p: &crate::protocol::Params) {}\n",
    )
    .unwrap();
    let found = circles(&dir);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].iter().any(|f| f.ends_with("check.rs")),
        "{found:?}"
    );
    assert!(
        found[0].iter().any(|f| f.ends_with("protocol.rs")),
        "{found:?}"
    );
}

/// Where protocol code lives: the crates above the hardware, and the examples.
fn protocol_code() -> Vec<PathBuf> {
    ["coherence/src", "protocols/src", "src", "examples"]
        .iter()
        .flat_map(|d| rust_files(&root().join(d)))
        .collect()
}

#[test]
fn protocol_code_reads_no_payload_by_position() {
    let mut bad = Vec::new();
    for f in protocol_code() {
        let code = code_of(&fs::read_to_string(&f).unwrap_or_default());
        for (i, line) in code.lines().enumerate() {
            for pat in ["args[", ".args(", "Msg::new(", "MsgType("] {
                if line.contains(pat) {
                    bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "positional payloads or hand-numbered types:\n{}",
        bad.join("\n")
    );
}

/// Calls of `instr(` or `bundles(` whose arguments hold a number literal.
fn literal_counts(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for pat in [".instr(", ".bundles("] {
        let mut from = 0;
        while let Some(i) = code[from..].find(pat) {
            let start = from + i + pat.len();
            from = start;
            let mut depth = 1;
            let end = code[start..]
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(code.len(), |(j, _)| start + j);
            let args = &code[start..end];
            let has_literal = args
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
            if has_literal {
                out.push(format!("{pat}{args})"));
            }
        }
    }
    out
}

#[test]
fn protocol_code_passes_no_number_to_instr_or_bundles() {
    let mut bad = Vec::new();
    for d in ["coherence/src", "protocols/src"] {
        for f in rust_files(&root().join(d)) {
            let code = code_of(&fs::read_to_string(&f).unwrap_or_default());
            for call in literal_counts(&code) {
                bad.push(format!("{}: {call}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "counts not taken from a cost sheet:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_literal_check_finds_a_literal() {
    let found =
        literal_counts("cx.instr(c.decode); cx.bundles(3, c.x.instrs); cx.instr(n.div_ceil(2))");
    assert_eq!(
        found,
        ["instr(n.div_ceil(2))", "bundles(3, c.x.instrs)"].map(|s| format!(".{s}"))
    );
}

#[test]
fn no_two_public_types_are_called_costs_or_op() {
    let mut seen: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in CRATES {
        for f in rust_files(&root().join(c)) {
            let code = code_of(&fs::read_to_string(&f).unwrap_or_default());
            for name in ["Costs", "Op"] {
                for kind in ["struct", "enum", "type", "trait"] {
                    let decl = format!("pub {kind} {name}");
                    for (i, _) in code.match_indices(&decl) {
                        let after = code[i + decl.len()..].chars().next();
                        if after.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_')) {
                            seen.entry(name).or_default().push(f.display().to_string());
                        }
                    }
                }
            }
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, v)| v.len() > 1).collect();
    assert!(twice.is_empty(), "public types sharing a name: {twice:?}");
}

/// The integration test binaries of the workspace: each `.rs` file directly
/// under a `tests/` folder, and each folder there with a `main.rs`.
fn test_targets() -> Vec<String> {
    let mut out = Vec::new();
    for d in [
        "tests",
        "magic/tests",
        "coherence/tests",
        "os-shim/tests",
        "protocols/tests",
    ] {
        let Ok(entries) = fs::read_dir(root().join(d)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let file = p.is_file() && p.extension().is_some_and(|x| x == "rs");
            if file || p.join("main.rs").is_file() {
                out.push(p.strip_prefix(root()).unwrap_or(&p).display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn at_most_six_integration_test_files() {
    let files = test_targets();
    assert!(
        files.len() <= 6,
        "{} integration test binaries: {files:?}",
        files.len()
    );
}

/// Every file of the repository, but the build's and git's.
fn repository_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != ".git" {
                    stack.push(p);
                }
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_reference_points_into_the_repository() {
    // Spelt in pieces, so this file does not name them itself.
    let outside = [
        ["FLASH", ".md"].concat(),
        ["PEERS", ".md"].concat(),
        ["METHODS", ".md"].concat(),
        ["../", "shared"].concat(),
    ];
    // CI builds LogGOPSim from its sources beside the clone: the one exception.
    let allowed = [root().join(".ci/run"), root().join(".ci/interop.sh")];
    let mut bad = Vec::new();
    for f in repository_files() {
        if allowed.contains(&f) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        for o in &outside {
            if text.contains(o.as_str()) {
                bad.push(format!("{} names {o}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "references outside the repository:\n{}",
        bad.join("\n")
    );
}

/// The packages the library `flashkit` pulls in when a study depends on it
/// with `features` (normal dependencies only), by name.
fn library_dependencies(features: &[&str]) -> BTreeSet<String> {
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.current_dir(root()).args([
        "tree",
        "-p",
        "flashkit",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--offline",
    ]);
    if !features.is_empty() {
        cmd.args(["-F", &features.join(",")]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_library_pulls_no_command_line_crate() {
    let deps = library_dependencies(&[]);
    assert!(
        deps.contains("protocols") && deps.contains("serde"),
        "{deps:?}"
    );
    for cli in ["clap", "plotters", "indicatif", "sha2", "flashkit-cli"] {
        assert!(!deps.contains(cli), "the library depends on {cli}");
    }
    // The check sees a dependency where there is one: drawing pulls plotters.
    assert!(library_dependencies(&["plot"]).contains("plotters"));
}
