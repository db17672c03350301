//! The exhaustive checks' reports as data (`flashkit check
//! coherence|holdoff|transfer`): which check, its bounds, each search's
//! model with the machine and cost sheets it was built on, the kit's
//! version, and what each search found. A report's JSON reads back equal,
//! and [`run`] of its configuration gives it again.
//!
//! ```
//! use flashkit::check::{self, CheckConfig, CheckKind, Model};
//! use flashkit::protocols::transfer::check::TransferCheck;
//! let small = TransferCheck { lines: 1, receives: 1, chunk: 1, ..TransferCheck::default() };
//! let config = CheckConfig::new(CheckKind::Transfer, 10_000, vec![Model::Transfer(small)]);
//! let report = check::run(&config, None).unwrap();
//! assert!(report.complete && report.violations == 0);
//! let back: check::CheckReport =
//!     serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
//! assert_eq!(back, report);
//! assert_eq!(check::run(&back.config, None).unwrap(), report);
//! ```

use coherence::check::CoherenceCheck;
use coherence::protocol::CohParams;
use magic::check::{Bounds, Progress, Report};
use magic::MagicParams;
use protocols::transfer::check::TransferCheck;
use protocols::user::check::HoldoffCheck;
use protocols::user::UserParams;
use serde::{Deserialize, Serialize};

/// Which protocol's handlers a check explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    /// The directory protocol: loads, stores and evictions of a few lines.
    Coherence,
    /// User-level messaging against translation changes.
    Holdoff,
    /// The bulk transfer: connection, commands, a stream split over receives.
    Transfer,
}

impl CheckKind {
    /// The check's name, as `flashkit check` takes it.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Coherence => "coherence",
            CheckKind::Holdoff => "holdoff",
            CheckKind::Transfer => "transfer",
        }
    }

    /// Some of the check's nodes play the same role, so its searches can
    /// store states up to renaming them: the coherence check's. The
    /// hold-off and transfer checks' nodes each play their own.
    pub fn has_symmetry(self) -> bool {
        matches!(self, CheckKind::Coherence)
    }
}

/// One search's model: its bounds, options and planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// A coherence check's.
    Coherence(CoherenceCheck),
    /// A hold-off check's (one technique).
    Holdoff(HoldoffCheck),
    /// A transfer check's.
    Transfer(TransferCheck),
}

impl Model {
    /// The check it belongs to.
    pub fn kind(&self) -> CheckKind {
        match self {
            Model::Coherence(_) => CheckKind::Coherence,
            Model::Holdoff(_) => CheckKind::Holdoff,
            Model::Transfer(_) => CheckKind::Transfer,
        }
    }

    /// Search its space within `bounds`; a model out of its ranges is
    /// refused, naming the field.
    pub fn run(&self, bounds: Bounds) -> Result<Report, magic::OutOfRange> {
        match self {
            Model::Coherence(c) => c.run(bounds),
            Model::Holdoff(c) => c.run(bounds),
            Model::Transfer(c) => c.run(bounds),
        }
    }

    /// The model as JSON: its fields by name.
    fn json(&self) -> serde_json::Value {
        match self {
            Model::Coherence(c) => serde_json::to_value(c),
            Model::Holdoff(c) => serde_json::to_value(c),
            Model::Transfer(c) => serde_json::to_value(c),
        }
        .unwrap_or_default()
    }
}

/// The protocol's parameters and cost sheets a search's machine was built
/// with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sheets {
    /// The coherence protocol's options, costs and planted bug.
    Coherence(CohParams),
    /// The user layer's parameters, costs and planted bug.
    Holdoff(UserParams),
    /// The transfer's configuration: its cost sheets, coherence options and
    /// planted bug (its machine is the search's).
    Transfer(Box<protocols::transfer::Config>),
}

/// One search of a check: its model, and the machine and sheets the model
/// builds (what it ran on).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// The model.
    pub model: Model,
    /// The machine's parameters.
    pub machine: MagicParams,
    /// The protocol's parameters and cost sheets.
    pub sheets: Sheets,
}

impl Search {
    /// The search of `model`, on the machine and sheets it builds.
    pub fn of(model: Model) -> Search {
        let (machine, sheets) = match &model {
            Model::Coherence(c) => {
                let (p, coh) = c.params();
                (p, Sheets::Coherence(coh))
            }
            Model::Holdoff(c) => {
                let (p, up) = c.params();
                (p, Sheets::Holdoff(up))
            }
            Model::Transfer(c) => {
                let t = c.config();
                (t.params.clone(), Sheets::Transfer(Box::new(t)))
            }
        };
        Search {
            model,
            machine,
            sheets,
        }
    }
}

/// The default of [`CheckConfig::symmetry`].
fn symmetry_on() -> bool {
    true
}

/// The default of [`CheckConfig::max_bytes`].
fn default_max_bytes() -> u64 {
    magic::check::DEFAULT_MAX_BYTES
}

/// What a check runs: which check, its bounds, and its searches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    /// The check.
    pub check: CheckKind,
    /// Distinct states at most, each search ([`Bounds::max_states`]).
    pub max_states: usize,
    /// Bytes each search may hold for its states ([`Bounds::max_bytes`];
    /// the default for a saved check that predates the key).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Instants a machine may take to settle after a move
    /// ([`Bounds::settle_instants`]).
    pub settle_instants: u64,
    /// States stored up to a renaming of the nodes that play the same role
    /// ([`Bounds::symmetry`]; on unless the check was run `--symmetry off`,
    /// and on for a saved check that predates the key). Off for a check
    /// whose nodes each play their own role ([`CheckKind::has_symmetry`]),
    /// as its searches' reports say.
    #[serde(default = "symmetry_on")]
    pub symmetry: bool,
    /// The searches, in the order they run.
    pub searches: Vec<Search>,
}

impl CheckConfig {
    /// Check `kind` of `models`, each search stopping at `max_states`
    /// (the other bounds at their defaults).
    pub fn new(kind: CheckKind, max_states: usize, models: Vec<Model>) -> CheckConfig {
        CheckConfig {
            check: kind,
            max_states,
            max_bytes: Bounds::default().max_bytes,
            settle_instants: Bounds::default().settle_instants,
            symmetry: kind.has_symmetry() && Bounds::default().symmetry,
            searches: models.into_iter().map(Search::of).collect(),
        }
    }

    /// The bounds each search runs within, posting its progress to
    /// `progress`, on as many threads as the machine has cores (the report
    /// is the same whatever the number: set [`Bounds::threads`] to choose).
    pub fn bounds(&self, progress: Option<&'static Progress>) -> Bounds {
        Bounds {
            max_states: self.max_states,
            max_bytes: self.max_bytes,
            settle_instants: self.settle_instants,
            progress,
            symmetry: self.symmetry,
            ..Bounds::default()
        }
    }

    /// Refuse bounds out of their ranges, a search of another check, and
    /// a search whose machine or sheets are not what its model builds
    /// (a check runs on the machine its model gives), naming the field.
    pub fn validate(&self) -> Result<(), CheckError> {
        self.bounds(None).validate()?;
        if self.searches.is_empty() {
            return Err(CheckError::Config("searches: at least one".into()));
        }
        for (i, s) in self.searches.iter().enumerate() {
            if s.model.kind() != self.check {
                return Err(CheckError::Config(format!(
                    "searches[{i}].model is a {} check's, in check {}",
                    s.model.kind().name(),
                    self.check.name()
                )));
            }
            let built = Search::of(s.model);
            for (k, same) in [
                ("machine", built.machine == s.machine),
                ("sheets", built.sheets == s.sheets),
            ] {
                if !same {
                    return Err(CheckError::Config(format!(
                        "searches[{i}].{k} is not what its model builds: a check runs on \
                         the machine and sheets its model gives"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Why a check has no report.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A bound or a model's value out of its range (the field named).
    #[error(transparent)]
    Range(#[from] magic::OutOfRange),
    /// A configuration that is not a check's.
    #[error("{0}")]
    Config(String),
}

/// A check's report: what made it (its configuration and the kit's
/// version), the totals over its searches, and what each search found.
///
/// Its JSON holds the configuration under `config`, the version under
/// `version`, the totals and each search's report under `runs`, and reads
/// back equal, refusing totals its runs do not give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ReportWire")]
pub struct CheckReport {
    /// The version of the kit that ran it (`flashkit`'s package version).
    pub version: String,
    /// What it ran.
    pub config: CheckConfig,
    /// Distinct states, summed over the searches.
    pub states: u64,
    /// Moves made, summed over the searches.
    pub transitions: u64,
    /// The deepest search's depth.
    pub depth: u32,
    /// Every search exhausted its bounded space.
    pub complete: bool,
    /// Violations, summed over the searches.
    pub violations: u32,
    /// The first violating search's violation.
    pub violation: Option<String>,
    /// Its shortest trace, one move a line.
    pub trace: Vec<String>,
    /// What each search found, in the order of `config.searches`.
    pub runs: Vec<Report>,
}

/// A report's JSON as read, before its totals are held to its runs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportWire {
    version: String,
    config: CheckConfig,
    states: u64,
    transitions: u64,
    depth: u32,
    complete: bool,
    violations: u32,
    violation: Option<String>,
    trace: Vec<String>,
    runs: Vec<Report>,
}

impl TryFrom<ReportWire> for CheckReport {
    type Error = String;

    fn try_from(w: ReportWire) -> Result<CheckReport, String> {
        // The configuration as `run` checks it (its bounds among it).
        w.config.validate().map_err(|e| format!("config.{e}"))?;
        // A search holds at most its bound's states.
        let most = w.config.max_states as u64;
        if let Some((i, r)) = w.runs.iter().enumerate().find(|r| r.1.states > most) {
            return Err(format!(
                "runs[{i}].states is {}, more than config.max_states, {most}",
                r.states
            ));
        }
        if w.runs.len() != w.config.searches.len() {
            return Err(format!(
                "runs has {} reports for the {} searches of config.searches",
                w.runs.len(),
                w.config.searches.len()
            ));
        }
        let r = report(w.config, w.runs);
        for (k, same) in [
            ("states", w.states == r.states),
            ("transitions", w.transitions == r.transitions),
            ("depth", w.depth == r.depth),
            ("complete", w.complete == r.complete),
            ("violations", w.violations == r.violations),
            ("violation", w.violation == r.violation),
            ("trace", w.trace == r.trace),
        ] {
            if !same {
                return Err(format!("{k} is not what the runs give"));
            }
        }
        Ok(CheckReport {
            version: w.version,
            ..r
        })
    }
}

/// The report of `config`'s searches, which found `runs`: the one place a
/// [`CheckReport`] is made (the totals from the runs).
pub fn report(config: CheckConfig, runs: Vec<Report>) -> CheckReport {
    let first = runs.iter().find(|r| r.violations > 0);
    CheckReport {
        version: env!("CARGO_PKG_VERSION").to_string(),
        states: runs.iter().map(|r| r.states).sum(),
        transitions: runs.iter().map(|r| r.transitions).sum(),
        depth: runs.iter().map(|r| r.depth).max().unwrap_or(0),
        complete: runs.iter().all(|r| r.complete),
        violations: runs.iter().map(|r| r.violations).sum(),
        violation: first.and_then(|r| r.violation.clone()),
        trace: first.map(|r| r.trace.clone()).unwrap_or_default(),
        config,
        runs,
    }
}

/// Run every search of `config`, posting progress to `progress`: its
/// report, or why it has none (a bound or a model out of range, named).
pub fn run(
    config: &CheckConfig,
    progress: Option<&'static Progress>,
) -> Result<CheckReport, CheckError> {
    config.validate()?;
    let bounds = config.bounds(progress);
    let runs = config
        .searches
        .iter()
        .map(|s| s.model.run(bounds))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(report(config.clone(), runs))
}

impl std::fmt::Display for CheckReport {
    /// The report as `flashkit check` prints it: a line per search (its
    /// model's fields, and whether its states were taken up to node
    /// symmetry), the totals, and the violation with its trace.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "check {}", self.config.check.name())?;
        let fields = |s: &Search| {
            s.model
                .json()
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        for (s, r) in self.config.searches.iter().zip(&self.runs) {
            let cfg = fields(s);
            writeln!(
                f,
                "  {cfg}: {} states{}, {} transitions, depth {}, {}, {} violation(s)",
                r.states,
                if r.symmetry {
                    " (up to node symmetry)"
                } else {
                    ""
                },
                r.transitions,
                r.depth,
                match (r.complete, r.limit) {
                    (true, _) => "complete".to_string(),
                    (false, Some(l)) => format!("not complete (stopped at {})", l.name()),
                    (false, None) => "not complete".to_string(),
                },
                r.violations
            )?;
        }
        writeln!(f, "states       {}", self.states)?;
        writeln!(f, "transitions  {}", self.transitions)?;
        writeln!(f, "depth        {}", self.depth)?;
        writeln!(f, "complete     {}", self.complete)?;
        writeln!(f, "violations   {}", self.violations)?;
        if let Some(v) = &self.violation {
            writeln!(f, "violation    {v}")?;
            // Of several searches, the one the violation and its trace are
            // from (the first that found one).
            let from = self.runs.iter().position(|r| r.violations > 0);
            if let (true, Some(i)) = (self.runs.len() > 1, from) {
                if let Some(s) = self.config.searches.get(i) {
                    writeln!(f, "found in     search {} ({})", i + 1, fields(s))?;
                }
            }
            writeln!(f, "trace (a shortest):")?;
            for t in &self.trace {
                writeln!(f, "  {t}")?;
            }
        }
        Ok(())
    }
}
