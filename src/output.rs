//! Where the program's output goes, and what a failed write means.
//!
//! Every output is named: standard output, or the file a flag names
//! (`--out`, `--trace`, a merge's `-o`). A write that fails ends the command
//! with one line naming that output and exit status 1, so a full disk never
//! passes as success. A reader that closes the pipe early (`| head`) is not
//! a failure: the command stops quietly with status 0.
//!
//! Standard output closed when the program starts (`flashkit ... >&-`) is
//! a failed write too, though the system would not say so: the Rust
//! runtime opens /dev/null in place of a closed standard stream before
//! `main` runs, and every write to it succeeds. So the program looks at
//! descriptor 1 earlier, while the process starts, and a command that
//! prints to a standard output that was closed fails as a full disk does.
//!
//! `out!` and `out_raw!` print to standard output and remember the first
//! failure; `main` asks [`finish`] at the end.
//! A command that writes a file calls [`write_file`] (or [`write_files`]
//! for a set), which renames a whole new file into place, or
//! [`Sink::create`] to write it piece by piece (a sweep's part, which a
//! resumed run reads back as far as it goes).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Why a command failed, and so its exit status.
pub enum Failure {
    /// Bad input from the user: one line on stderr, exit status 2.
    Usage(String),
    /// The model stopped with work pending or a check failed (what went
    /// wrong was printed): status 1.
    Stuck,
    /// A result that cannot be produced (one line): status 1.
    Failed(String),
    /// An output could not be written (the line names it): status 1.
    Output(String),
    /// The reader closed the pipe: a quiet exit, status 0.
    Closed,
}

/// The failure of writing `name` with error `e`: a closed pipe is a quiet
/// stop, anything else names the output.
pub fn failed(name: &str, e: &io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::Closed
    } else {
        Failure::Output(format!("cannot write {name}: {e}"))
    }
}

/// Standard output was closed when the process started (see the module's
/// notes).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Run by the loader before `main`, so before the runtime puts /dev/null
/// where a closed standard stream was.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[link_section = ".init_array"]
static SEE_STDOUT: extern "C" fn() = see_stdout;

#[cfg(target_vendor = "apple")]
#[used]
#[link_section = "__DATA,__mod_init_func"]
static SEE_STDOUT: extern "C" fn() = see_stdout;

#[cfg(unix)]
extern "C" fn see_stdout() {
    extern "C" {
        fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    }
    /// `F_GETFD`, the same number on every Unix.
    const F_GETFD: i32 = 1;
    // SAFETY: F_GETFD only reads a descriptor's flags, and fails (-1,
    // EBADF) when the descriptor is not open; no memory is passed.
    if unsafe { fcntl(1, F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Standard output, or the error of writing it if it was closed when the
/// process started.
fn stdout() -> io::Result<io::StdoutLock<'static>> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        // EBADF: what a write to the closed descriptor would have said.
        return Err(io::Error::from_raw_os_error(9));
    }
    Ok(io::stdout().lock())
}

/// `Err` if standard output was closed when the process started (for
/// output written other than through this module, as clap's help).
pub fn stdout_open() -> Result<(), Failure> {
    stdout()
        .map(drop)
        .map_err(|e| failed("standard output", &e))
}

/// The first error writing standard output, if one happened.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);

fn stdout_error() -> std::sync::MutexGuard<'static, Option<io::Error>> {
    STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner())
}

/// Write to standard output; after a failure nothing more is written and
/// [`finish`] reports the first one.
pub fn print(args: fmt::Arguments<'_>) {
    let mut err = stdout_error();
    if err.is_none() {
        if let Err(e) = stdout().and_then(|mut o| o.write_fmt(args)) {
            *err = Some(e);
        }
    }
}

/// Flush standard output and say whether everything printed reached it.
pub fn finish() -> Result<(), Failure> {
    let mut err = stdout_error();
    if err.is_none() {
        if let Err(e) = io::stdout().lock().flush() {
            *err = Some(e);
        }
    }
    // Nothing printed, nothing lost: a closed standard output is an error
    // only to a command that wrote to it.
    match err.as_ref() {
        None => Ok(()),
        Some(e) => Err(failed("standard output", e)),
    }
}

/// Print a line to standard output (see [`print`]).
macro_rules! out {
    () => {
        $crate::output::print(format_args!("\n"))
    };
    ($($t:tt)*) => {{
        $crate::output::print(format_args!($($t)*));
        $crate::output::print(format_args!("\n"));
    }};
}

/// As `out!`, without the newline.
macro_rules! out_raw {
    ($($t:tt)*) => {
        $crate::output::print(format_args!($($t)*))
    };
}

/// A line on standard error (what went wrong). An error writing it is
/// ignored: there is nowhere left to say it, and the exit status tells.
pub fn say(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", shortened(&escaped(line)));
}

/// `line` with its control characters written as escapes (`\n`,
/// `\u{1b}`): a value echoed back from the input (a saved result's
/// version, a key) cannot break the line in two, or colour the terminal.
fn escaped(line: &str) -> std::borrow::Cow<'_, str> {
    // Control characters, and the separators and direction marks that
    // also break or reorder a line on some terminals.
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !line.chars().any(unsafe_char) {
        return line.into();
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// The most characters a line on standard error holds: an input echoed
/// back (a megabyte-long value, say) is cut in its middle.
const MOST_SAID: usize = 2000;

fn shortened(line: &str) -> std::borrow::Cow<'_, str> {
    let n = line.chars().count();
    if n <= MOST_SAID {
        return line.into();
    }
    let head: String = line.chars().take(MOST_SAID / 2).collect();
    let tail: String = line.chars().skip(n - MOST_SAID / 2).collect();
    format!(
        "{head} ... ({} characters left out) ... {tail}",
        n - MOST_SAID
    )
    .into()
}

/// Refuse, before any work, an output file `flag` names that cannot be
/// written as one: a folder, or a path whose folder does not exist (bad
/// input, said up front, not a failed write after the run).
pub fn out_file(flag: &str, path: &str) -> Result<(), Failure> {
    let p = std::path::Path::new(path);
    if p.is_dir() {
        return Err(Failure::Usage(format!(
            "{flag} {path} is a folder, not a file to write"
        )));
    }
    // `a.svg/` names a folder whatever is there (the system refuses to
    // write it as a file, after the run).
    if path.ends_with('/') {
        return Err(Failure::Usage(format!(
            "{flag} {path} ends in a slash, so it names a folder, not a file to write"
        )));
    }
    // A link that leads nowhere makes the file it names: that file's folder
    // is the one that must be there.
    let end = dangling_end(p);
    let (p, via) = match &end {
        Some(t) => (t.as_path(), format!(" (a link to {})", t.display())),
        None => (p, String::new()),
    };
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = parent.filter(|d| !d.is_dir()) {
        return Err(Failure::Usage(match not_a_folder(d) {
            Some(f) => format!(
                "{flag} {path}{via}: {} is a file, not a folder",
                f.display()
            ),
            None => format!("{flag} {path}{via}: its folder does not exist"),
        }));
    }
    Ok(())
}

/// Whether `path` is where standard output goes: its file (however
/// named) or its pipe.
fn is_stdout(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), std::fs::metadata("/dev/stdout")) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// `Err` if `path` names the file standard output was sent to, for a
/// command that prints there too: the file written would be renamed over
/// it, and what is printed lost with the file it went to. (`/dev/stdout`
/// itself is written through standard output, before what is printed.)
pub fn not_stdout(flag: &str, path: &str) -> Result<(), Failure> {
    let renamed = matches!(target(std::path::Path::new(path)), Target::File(..));
    if renamed && is_stdout(path) {
        return Err(Failure::Usage(format!(
            "{flag} {path} is the file standard output goes to, which the command prints to \
             as well: write it to another file"
        )));
    }
    Ok(())
}

/// Where a link that leads nowhere ends (following links to links, as
/// opening it to write does, by [`target`]); `None` unless `p` is such a
/// link.
fn dangling_end(p: &std::path::Path) -> Option<std::path::PathBuf> {
    match target(p) {
        Target::File(to, None) if to != p => Some(to),
        _ => None,
    }
}

/// Refuse, before any work, a folder `flag` names to write files in that
/// cannot be one: a file, or a path through a file (a missing folder is
/// made).
pub fn out_dir(flag: &str, dir: &str) -> Result<(), Failure> {
    let p = std::path::Path::new(dir);
    // No folder can be made where a link stands (its end is not made).
    if let Some(t) = dangling_end(p) {
        return Err(Failure::Usage(format!(
            "{flag} {dir} is a link to {}, which does not exist: not a folder to write files in",
            t.display()
        )));
    }
    if std::fs::metadata(p).is_ok_and(|m| !m.is_dir()) {
        return Err(Failure::Usage(format!(
            "{flag} {dir} is a file, not a folder to write files in"
        )));
    }
    match not_a_folder(p) {
        Some(f) => Err(Failure::Usage(format!(
            "{flag} {dir}: {} is a file, not a folder",
            f.display()
        ))),
        None => Ok(()),
    }
}

/// The first of `p`'s existing ancestors (itself included) that is not a
/// folder, if one is.
fn not_a_folder(p: &std::path::Path) -> Option<&std::path::Path> {
    p.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()))
}

/// Write a whole file; a failure names the file (exit status 1). A
/// regular file is written under a temporary name in its folder and
/// renamed into its place, so a run that fails or is killed midway leaves
/// the old file (or none), never one cut short. Written in place instead:
/// a device or pipe (`/dev/full`, `/dev/stdout`), a file owned by another
/// user (whose ownership a rename would take), and a file in a folder that
/// takes no new file.
pub fn write_file(path: &str, bytes: &[u8]) -> Result<(), Failure> {
    stage(path, bytes)?.commit()
}

/// Write several files as one output: every file is written whole before
/// any takes its place, so a failure writing one leaves the old set
/// (only a rename failing midway, in one folder, could leave a mix).
pub fn write_files(files: &[(String, &[u8])]) -> Result<(), Failure> {
    let staged = files
        .iter()
        .map(|(path, bytes)| stage(path, bytes))
        .collect::<Result<Vec<_>, _>>()?;
    staged.into_iter().try_for_each(Staged::commit)
}

/// A file written under a temporary name in its folder, waiting to be
/// renamed into its place (removed if dropped first); or one written in
/// place already.
struct Staged {
    path: String,
    /// The temporary file and the place it is renamed to.
    rename: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// Where a path's bytes go: a regular file (existing or not) at the end
/// of its links, or something to write in place.
enum Target {
    File(std::path::PathBuf, Option<std::fs::Metadata>),
    InPlace,
}

/// Follow `p`'s links (a dangling one to the file it names): a device,
/// a pipe or what `/dev` and `/proc` name (`/dev/stdout` is a link to
/// wherever standard output goes) is written in place.
fn target(p: &std::path::Path) -> Target {
    let mut cur = p.to_path_buf();
    for _ in 0..40 {
        if cur.starts_with("/dev") || cur.starts_with("/proc") {
            return Target::InPlace;
        }
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&cur) {
                Ok(to) => {
                    let base = cur.parent().unwrap_or(std::path::Path::new(""));
                    cur = base.join(to);
                }
                Err(_) => return Target::InPlace,
            },
            Ok(m) if m.is_file() => return Target::File(cur, Some(m)),
            Ok(_) => return Target::InPlace,
            Err(_) => return Target::File(cur, None),
        }
    }
    // A loop of links: the system says what is wrong with it.
    Target::InPlace
}

/// Write `bytes` where `path` names, in place; a failure leaves no
/// regular file cut short under its name.
fn in_place(path: &str, bytes: &[u8]) -> Result<Staged, Failure> {
    // Standard output's own handle, whose place in its file is where
    // what is printed after goes: a second opening would write from the
    // file's start, over it.
    if is_stdout(path) {
        let mut o = io::stdout().lock();
        o.write_all(bytes)
            .and_then(|()| o.flush())
            .map_err(|e| failed(path, &e))?;
        return Ok(Staged {
            path: path.to_string(),
            rename: None,
        });
    }
    let mut s = Sink::create(path)?;
    s.write(bytes).inspect_err(|_| {
        if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(path);
        }
    })?;
    Ok(Staged {
        path: path.to_string(),
        rename: None,
    })
}

/// Temporary names taken by this process (with its id, they are its own;
/// a name another process holds is passed over).
static TEMPORARY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Write `bytes` for `path` (see [`write_file`]).
fn stage(path: &str, bytes: &[u8]) -> Result<Staged, Failure> {
    use std::os::unix::fs::MetadataExt;
    let (to, meta) = match target(std::path::Path::new(path)) {
        Target::File(to, meta) => (to, meta),
        Target::InPlace => return in_place(path, bytes),
    };
    if meta.is_some() {
        // A file this process may not write is not replaced either (the
        // open writes nothing: it only asks).
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(&to) {
            return Err(failed(path, &e));
        }
    }
    let dir = to.parent().unwrap_or(std::path::Path::new(""));
    let (tmp, f) = loop {
        let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
        // Short, whatever the file's name: a name near the system's
        // limit still has room beside it.
        let tmp = dir.join(format!(".flashkit-{}-{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1 << 20 => continue,
            // A folder that takes no new file may still hold a file to
            // write over.
            Err(e) if meta.is_some() && e.kind() == io::ErrorKind::PermissionDenied => {
                return in_place(path, bytes)
            }
            Err(e) => return Err(failed(path, &e)),
        }
    };
    let staged = Staged {
        path: path.to_string(),
        rename: Some((tmp, to)),
    };
    if let (Some(m), Ok(t)) = (&meta, f.metadata()) {
        if (m.uid(), m.gid()) != (t.uid(), t.gid()) {
            // Another's file keeps its owner (and a folder that lets only
            // a file's owner replace it, /tmp's, is no obstacle).
            drop(staged);
            return in_place(path, bytes);
        }
        // The file replaced keeps its permissions.
        let _ = f.set_permissions(m.permissions());
    }
    Sink::file(path, f).write(bytes)?;
    Ok(staged)
}

impl Staged {
    /// Rename the staged file into its place.
    fn commit(mut self) -> Result<(), Failure> {
        match self.rename.take() {
            None => Ok(()),
            Some((tmp, to)) => std::fs::rename(&tmp, to).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                failed(&self.path, &e)
            }),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.rename.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The most bytes read from an input that is not a regular file (a pipe,
/// a device): `/dev/zero` never ends.
const MOST_FROM_A_STREAM: u64 = 1 << 28;

/// An input file's text, refused if it is not UTF-8 text, or if it is not
/// a regular file and holds more than [`MOST_FROM_A_STREAM`] bytes.
pub fn read_input(path: &str) -> Result<String, Failure> {
    use std::io::Read as _;
    let bad = |why: String| Failure::Usage(format!("{path}: {why}"));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.is_file() {
        return std::fs::read_to_string(path).map_err(|e| bad(e.to_string()));
    }
    let f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(MOST_FROM_A_STREAM + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MOST_FROM_A_STREAM {
        return Err(bad(format!(
            "not a regular file, and more than {MOST_FROM_A_STREAM} bytes: a stream without end?"
        )));
    }
    String::from_utf8(bytes).map_err(|_| bad("stream did not contain valid UTF-8".into()))
}

/// An output written piece by piece, each piece flushed as it is written:
/// standard output or a file, named for errors.
pub struct Sink {
    name: String,
    to: To,
}

enum To {
    Stdout,
    File(std::fs::File),
}

impl Sink {
    /// Standard output.
    pub fn stdout() -> Sink {
        Sink {
            name: "standard output".into(),
            to: To::Stdout,
        }
    }

    /// A new file (an old one is truncated).
    pub fn create(path: &str) -> Result<Sink, Failure> {
        let f = std::fs::File::create(path).map_err(|e| failed(path, &e))?;
        Ok(Sink::file(path, f))
    }

    /// A file opened by the caller (to append, say).
    pub fn file(path: &str, f: std::fs::File) -> Sink {
        Sink {
            name: path.to_string(),
            to: To::File(f),
        }
    }

    /// What this output is called in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Write `bytes` and flush them.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let r = match &mut self.to {
            To::Stdout => stdout().and_then(|mut o| o.write_all(bytes).and_then(|_| o.flush())),
            To::File(f) => f.write_all(bytes).and_then(|_| f.flush()),
        };
        r.map_err(|e| failed(&self.name, &e))
    }
}
