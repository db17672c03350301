//! `flashkit check`: the exhaustive search over the real handlers, its
//! bounds from the command line, and its report.

use crate::output::{self, Failure};
use crate::{out_of_range, Format};
use clap::{Args, ValueEnum};
use coherence::check::CoherenceCheck;
use flashkit::check::{CheckConfig, CheckReport, Model};
use magic::check::{Bounds, Progress, Report};
use protocols::transfer::check::TransferCheck;
use protocols::user::check::HoldoffCheck;
use protocols::user::experiments::Technique;

/// Which protocol's handlers to check.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckKind {
    /// The directory protocol: loads, stores and evictions of a few lines.
    Coherence,
    /// User-level messaging against translation changes, under hold-off,
    /// invalidation and the software TLB.
    Holdoff,
    /// The bulk transfer: connection, commands, a stream split over receives.
    Transfer,
}

impl CheckKind {
    /// The library's name for the check.
    fn kind(self) -> flashkit::check::CheckKind {
        match self {
            CheckKind::Coherence => flashkit::check::CheckKind::Coherence,
            CheckKind::Holdoff => flashkit::check::CheckKind::Holdoff,
            CheckKind::Transfer => flashkit::check::CheckKind::Transfer,
        }
    }

    fn name(self) -> &'static str {
        self.kind().name()
    }

    fn bugs(self) -> Vec<&'static str> {
        match self {
            CheckKind::Coherence => coherence::check::Bug::ALL.map(|b| b.name()).to_vec(),
            CheckKind::Holdoff => protocols::user::check::Bug::ALL.map(|b| b.name()).to_vec(),
            CheckKind::Transfer => protocols::transfer::check::Bug::ALL
                .map(|b| b.name())
                .to_vec(),
        }
    }
}

/// A flag whose values are a type's names: `--help` lists every one, and
/// a value not among them is the type's own error (which lists them too),
/// after the flag.
#[derive(Clone)]
struct Choices<T> {
    names: &'static [&'static str],
    of: std::marker::PhantomData<fn() -> T>,
}

fn choices<T>(names: &'static [&'static str]) -> Choices<T> {
    Choices {
        names,
        of: std::marker::PhantomData,
    }
}

impl<T> clap::builder::TypedValueParser for Choices<T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map_or(String::new(), |l| format!("--{l}: "));
        value.to_string_lossy().parse::<T>().map_err(|why| {
            cmd.clone()
                .error(clap::error::ErrorKind::InvalidValue, format!("{flag}{why}"))
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

/// A byte count as the command line gives it: digits, then optionally K,
/// M, G, T or P (powers of 1024, an `iB` or `B` after it allowed).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (num, unit) = s.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count (digits, then K, M, G, T or P)"))?;
    // `iB` and `B` follow a unit's letter; `B` alone is bytes.
    let bare = match unit.strip_suffix("iB") {
        Some("") => return Err(format!("{s:?}: iB follows K, M, G, T or P")),
        Some(u) => u,
        None => unit.strip_suffix('B').unwrap_or(unit),
    };
    let shift = match bare {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        "T" | "t" => 40,
        "P" | "p" => 50,
        u if u.starts_with(['.', ',']) => {
            return Err(format!(
                "{s:?}: a whole number of units (a fraction in the next smaller unit, as 1536M for 1.5G)"
            ))
        }
        _ => return Err(format!("{s:?}: the unit must be K, M, G, T or P")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is more bytes than a count can hold"))
}

/// The bounds of a check; each flag applies to the kinds its help names.
#[derive(Args)]
pub struct CheckArgs {
    /// coherence: nodes, each with a processor (2 to 4; default 3).
    #[arg(long)]
    nodes: Option<u32>,
    /// coherence: lines the processors touch (1 to 4; default 1).
    /// holdoff: lines each operation moves (1 to 32; default 8).
    /// transfer: lines sent (1 to 8; default 6).
    #[arg(long)]
    lines: Option<u32>,
    /// coherence: accesses each processor issues (0 to 8; default 2).
    /// holdoff: operations, one after the other (1 to 2; default 2).
    #[arg(long)]
    ops: Option<u32>,
    /// MAGIC data buffers per node (coherence 2 to 16, holdoff 1 to 16,
    /// default 2; transfer 4 to 16, default 4).
    #[arg(long)]
    buffers: Option<u32>,
    /// holdoff: translation changes of the source page (1 to 2; default 2).
    #[arg(long)]
    changes: Option<u32>,
    /// holdoff: one technique (default: each of the three in turn).
    #[arg(long, value_enum)]
    technique: Option<flashkit::scenario::TechniqueKind>,
    /// transfer: receives the stream is split over (1 to 4; default 3).
    #[arg(long)]
    receives: Option<u32>,
    /// transfer: lines per invocation of the sender's handler (1 to the
    /// buffers; default 2).
    #[arg(long)]
    chunk: Option<u32>,
    /// transfer: the receive buffer's offset within its line (0 to 127;
    /// default 64).
    #[arg(long)]
    offset: Option<u32>,
    /// coherence: the directory format (default bitvector).
    #[arg(long, value_parser = choices::<coherence::DirFormat>(coherence::DirFormat::NAMES))]
    directory: Option<coherence::DirFormat>,
    /// coherence: links in each node's pointer store, dynamic pointers (1
    /// to 1048576; default 8192).
    #[arg(long)]
    pointer_store: Option<u32>,
    /// coherence: who collects invalidation acknowledgements (default
    /// home).
    #[arg(long, value_parser = choices::<coherence::Acks>(coherence::Acks::NAMES))]
    acks: Option<coherence::Acks>,
    /// coherence: clean evictions send replacement hints (true or false;
    /// default true).
    #[arg(long)]
    hints: Option<bool>,
    /// coherence: what an owner does with a forward that arrives before it
    /// has used its reply (default nak).
    #[arg(long, value_parser = choices::<coherence::Forwards>(coherence::Forwards::NAMES))]
    forwards: Option<coherence::Forwards>,
    /// Plant a known bug in the handlers (`list`: the check's bugs, a line
    /// each, or as --format says).
    #[arg(long, value_name = "BUG")]
    inject: Option<String>,
    /// Stop after this many distinct states, 1 to 100000000 (default
    /// 30000000; the report then says complete: false, stopped at the
    /// state maximum). Each takes some 50 bytes, and the coherence check
    /// holds a packed snapshot of some 600 bytes for each found and not yet
    /// expanded: --nodes 4 exhausts its 26,767,466 states within some 3 GB.
    #[arg(long)]
    max_states: Option<usize>,
    /// Stop once the states found take more than this many bytes, 1M to
    /// 1P, as a number with an optional K, M, G, T or P (powers of 1024;
    /// default 8G; the report then says complete: false, stopped at the
    /// memory maximum). The search counts its states' fingerprints, paths
    /// and snapshots; the process takes somewhat more (the largest bounds
    /// stop at 8G with the process at some 9.5 GB). On a smaller machine,
    /// give a smaller figure.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true, value_parser = parse_bytes)]
    max_bytes: Option<u64>,
    /// Threads the search uses, 0 to 64, 0 for one per core (default 0).
    /// The report is the same whatever the number.
    #[arg(long)]
    threads: Option<usize>,
    /// coherence: store states up to a renaming of the nodes that play the
    /// same role (every node that is no line's home), on or off (default
    /// on; each run's report says which ran). The hold-off and transfer
    /// checks' two nodes play different roles: they have no symmetry.
    #[arg(long, value_enum)]
    symmetry: Option<Symmetry>,
}

/// Whether a search takes states up to a renaming of symmetric nodes.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Symmetry {
    /// States up to a renaming of the nodes that play the same role.
    On,
    /// The plain search.
    Off,
}

/// A flag the check does not take, as the one line the user sees.
fn unused(kind: CheckKind, a: &CheckArgs) -> Option<String> {
    let given = |x: bool, flag: &str| x.then(|| flag.to_string());
    let o = |x: &Option<u32>| x.is_some();
    let protocol = given(a.directory.is_some(), "--directory")
        .or(given(o(&a.pointer_store), "--pointer-store"))
        .or(given(a.acks.is_some(), "--acks"))
        .or(given(a.hints.is_some(), "--hints"))
        .or(given(a.forwards.is_some(), "--forwards"));
    let bad = match kind {
        CheckKind::Coherence => given(o(&a.changes), "--changes")
            .or(given(a.technique.is_some(), "--technique"))
            .or(given(o(&a.receives), "--receives"))
            .or(given(o(&a.chunk), "--chunk"))
            .or(given(o(&a.offset), "--offset")),
        CheckKind::Holdoff => protocol
            .or(given(a.symmetry.is_some(), "--symmetry"))
            .or(given(o(&a.nodes), "--nodes"))
            .or(given(o(&a.receives), "--receives"))
            .or(given(o(&a.chunk), "--chunk"))
            .or(given(o(&a.offset), "--offset")),
        CheckKind::Transfer => protocol
            .or(given(a.symmetry.is_some(), "--symmetry"))
            .or(given(o(&a.nodes), "--nodes"))
            .or(given(o(&a.ops), "--ops"))
            .or(given(o(&a.changes), "--changes"))
            .or(given(a.technique.is_some(), "--technique")),
    };
    bad.map(|f| format!("{f} does not apply to check {}", kind.name()))
}

/// Run `flashkit check KIND` with `a`'s bounds.
pub fn check(kind: CheckKind, a: CheckArgs, format: Format) -> Result<(), Failure> {
    if let Some(e) = unused(kind, &a) {
        return Err(Failure::Usage(e));
    }
    if a.inject.as_deref() == Some("list") {
        return list(kind, &a, format);
    }
    let bug = match &a.inject {
        None => None,
        Some(x) => Some(
            kind.bugs()
                .into_iter()
                .position(|b| b == x)
                .ok_or_else(|| {
                    Failure::Usage(format!(
                        "--inject {x} is not a bug of check {} (--inject list names them)",
                        kind.name()
                    ))
                })?,
        ),
    };
    let mut models = Vec::new();
    match kind {
        CheckKind::Coherence => {
            let d = CoherenceCheck::default();
            let c = CoherenceCheck {
                nodes: a.nodes.unwrap_or(d.nodes),
                lines: a.lines.unwrap_or(d.lines),
                ops: a.ops.unwrap_or(d.ops),
                buffers: a.buffers.unwrap_or(d.buffers),
                format: a.directory.unwrap_or(d.format),
                pointer_store: a.pointer_store.unwrap_or(d.pointer_store),
                acks: a.acks.unwrap_or(d.acks),
                hints: a.hints.unwrap_or(d.hints),
                forwards: a.forwards.unwrap_or(d.forwards),
                inject: bug.map(|i| coherence::check::Bug::ALL[i]),
            };
            // The pointer store is the dynamic-pointer directory's alone
            // (said in the flags' words before the model's own check).
            if a.pointer_store.is_some_and(|n| n > 0 && n <= 1 << 20)
                && c.format != coherence::DirFormat::DynamicPointer
            {
                return Err(Failure::Usage(format!(
                    "--pointer-store applies to --directory dynamic-pointer only, not {}",
                    c.format.name()
                )));
            }
            if let Some(b) = c.inject.filter(|b| !b.acts_under(c.acks)) {
                return Err(Failure::Usage(format!(
                    "--inject {} does nothing under --acks {}: the home keeps no entry pending while the writer collects the acknowledgements",
                    b.name(),
                    c.acks.name()
                )));
            }
            c.validate().map_err(|e| Failure::Usage(out_of_range(&e)))?;
            models.push(Model::Coherence(c));
        }
        CheckKind::Holdoff => {
            let d = HoldoffCheck::default();
            let planted = bug.map(|i| protocols::user::check::Bug::ALL[i]);
            // Without a technique named, a planted bug is searched for
            // under each technique it acts under, and only those.
            let techniques = match a.technique {
                Some(t) => vec![t.technique()],
                None => [Technique::Holdoff, Technique::Invalidate, Technique::Tlb]
                    .into_iter()
                    .filter(|&t| planted.is_none_or(|b| b.acts_under(t)))
                    .collect(),
            };
            if let (Some(b), [t]) = (planted, &techniques[..]) {
                if !b.acts_under(*t) {
                    return Err(Failure::Usage(format!(
                        "--inject {} does nothing under --technique {}: its handlers are the {} technique's",
                        b.name(),
                        t.name(),
                        b.technique().name()
                    )));
                }
            }
            for technique in techniques {
                models.push(Model::Holdoff(HoldoffCheck {
                    technique,
                    lines: a.lines.unwrap_or(d.lines),
                    changes: a.changes.unwrap_or(d.changes),
                    ops: a.ops.unwrap_or(d.ops),
                    buffers: a.buffers.unwrap_or(d.buffers),
                    inject: planted,
                }));
            }
        }
        CheckKind::Transfer => {
            let d = TransferCheck::default();
            let c = TransferCheck {
                lines: a.lines.unwrap_or(d.lines),
                receives: a.receives.unwrap_or(d.receives),
                chunk: a.chunk.unwrap_or(d.chunk),
                buffers: a.buffers.unwrap_or(d.buffers),
                offset: a.offset.unwrap_or(d.offset),
                inject: bug.map(|i| protocols::transfer::check::Bug::ALL[i]),
            };
            if let Some(b) = c.inject.filter(|b| !b.acts_with(c.receives)) {
                return Err(Failure::Usage(format!(
                    "--inject {} does nothing with --receives {}: it fills a later receive before an earlier one",
                    b.name(),
                    c.receives
                )));
            }
            models.push(Model::Transfer(c));
        }
    }
    let max_states = a.max_states.unwrap_or(magic::check::DEFAULT_MAX_STATES);
    let mut config = CheckConfig::new(kind.kind(), max_states, models);
    config.max_bytes = a.max_bytes.unwrap_or(magic::check::DEFAULT_MAX_BYTES);
    if a.symmetry == Some(Symmetry::Off) {
        config.symmetry = false;
    }
    let bounds = Bounds {
        threads: a.threads.unwrap_or(0),
        ..config.bounds(Some(&PROGRESS))
    };
    bounds
        .validate()
        .map_err(|e| Failure::Usage(out_of_range(&e)))?;
    // Each search in turn (its `run` refuses bounds out of range, naming
    // the field).
    let n = config.searches.len();
    let mut runs: Vec<Report> = Vec::new();
    for (i, s) in config.searches.iter().enumerate() {
        let report = shown(kind, (i, n), bounds, || s.model.run(bounds))
            .map_err(|e| Failure::Usage(out_of_range(&e)))?;
        runs.push(report);
    }
    let o: CheckReport = flashkit::check::report(config, runs);
    match format {
        // One line with its keys in order, as every result prints (and as
        // `flashkit run` prints it again from the saved file).
        Format::Json => out!(
            "{}",
            serde_json::to_value(&o).map_err(|e| Failure::Failed(e.to_string()))?
        ),
        Format::Csv => out_raw!(
            "{}",
            flashkit::sweep::csv_row(&serde_json::to_value(&o).unwrap_or_default())
        ),
        Format::Table => out_raw!("{o}"),
    }
    if o.violations > 0 {
        output::say(&format!(
            "error: check {}: {}",
            o.config.check.name(),
            o.violation.as_deref().unwrap_or("a violation")
        ));
        return Err(Failure::Stuck);
    }
    // A planted bug the search did not find: the bounds are too small for
    // it to show (or the search stopped first), which a clean report alone
    // would hide.
    if let Some(bug) = &a.inject {
        let why = if o.complete {
            "it cannot show within these bounds (the search was complete)"
        } else {
            "the search stopped before it was complete"
        };
        output::say(&format!(
            "note: check {}: the planted bug {bug} was not found: {why}",
            o.config.check.name()
        ));
    }
    Ok(())
}

/// `--inject list`: the check's bugs, a line each (a JSON array, or a
/// CSV column). It runs no search, so it takes no bound.
fn list(kind: CheckKind, a: &CheckArgs, format: Format) -> Result<(), Failure> {
    let given = [
        (a.nodes.is_some(), "--nodes"),
        (a.lines.is_some(), "--lines"),
        (a.ops.is_some(), "--ops"),
        (a.buffers.is_some(), "--buffers"),
        (a.changes.is_some(), "--changes"),
        (a.technique.is_some(), "--technique"),
        (a.receives.is_some(), "--receives"),
        (a.chunk.is_some(), "--chunk"),
        (a.offset.is_some(), "--offset"),
        (a.directory.is_some(), "--directory"),
        (a.pointer_store.is_some(), "--pointer-store"),
        (a.acks.is_some(), "--acks"),
        (a.hints.is_some(), "--hints"),
        (a.forwards.is_some(), "--forwards"),
        (a.max_states.is_some(), "--max-states"),
        (a.max_bytes.is_some(), "--max-bytes"),
        (a.threads.is_some(), "--threads"),
        (a.symmetry.is_some(), "--symmetry"),
    ];
    if let Some((_, f)) = given.iter().find(|g| g.0) {
        return Err(Failure::Usage(format!(
            "{f} does not apply to --inject list, which runs no search"
        )));
    }
    crate::list_out("bug", &kind.bugs(), format)
}

/// Where the running search posts how far it has got.
static PROGRESS: Progress = Progress::new();

/// Run search `i` of `n` of check `kind` within `bounds`, showing how far
/// it has got on standard error while it runs, when that is a terminal
/// (never in a log).
fn shown<T>(
    kind: CheckKind,
    (i, n): (usize, usize),
    bounds: Bounds,
    search: impl FnOnce() -> T,
) -> T {
    use std::io::IsTerminal as _;
    if !std::io::stderr().is_terminal() {
        return search();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}") {
        bar.set_style(st);
    }
    let which = if n > 1 {
        format!("check {}, search {} of {n}", kind.name(), i + 1)
    } else {
        format!("check {}", kind.name())
    };
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let r = std::thread::scope(|s| {
        let (bar, which) = (&bar, &which);
        s.spawn(move || loop {
            let p = &PROGRESS;
            bar.set_message(format!(
                "{which}: {} states (stops at {}), {} MiB held (stops at {} MiB), {} transitions, depth {}",
                p.states(),
                bounds.max_states,
                p.bytes() >> 20,
                bounds.max_bytes >> 20,
                p.transitions(),
                p.depth()
            ));
            bar.tick();
            if stopped
                .recv_timeout(std::time::Duration::from_millis(200))
                .is_ok()
            {
                break;
            }
        });
        let r = search();
        let _ = stop.send(());
        r
    });
    bar.finish_and_clear();
    r
}
