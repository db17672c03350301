//! The coherence-mode study: the same transfer under each way of keeping
//! message data coherent, for each state the buffers can start in, side by
//! side. A row says what a mode costs (time, bandwidth, the coherence
//! actions MAGIC took, the user's processor time with its flushes) and
//! what it buys (`stale_lines`: lines the receiving process would read
//! wrong). A combination a mode cannot serve is listed with its reason.
//!
//! ```
//! use flashkit::scenario::{Placement, Receiver, Scenario, Sender, StudyMode, StudyPoint};
//! use flashkit::study;
//!
//! let base = Scenario::default();
//! let dirty = |mode| StudyPoint { mode, sender: Sender::Dirty, ..StudyPoint::default() };
//! let (none, _) = study::point(&dirty(StudyMode::None), &base, false).unwrap();
//! let (flushed, _) = study::point(&dirty(StudyMode::NoneFlush), &base, false).unwrap();
//! let (local, _) = study::point(&dirty(StudyMode::Local), &base, false).unwrap();
//! assert!(none.stale_lines > 0 && flushed.stale_lines == 0 && local.stale_lines == 0);
//! // The flush is the user's processor's work; local coherence is MAGIC's.
//! assert!(flushed.processor_us > local.processor_us);
//! assert!(local.interventions == 32 && flushed.interventions == 0);
//! ```

use crate::scenario::{
    header, study_config, Placement, Receiver, RunError, Scenario, Sender, StudyMode, StudyPoint,
};
pub use crate::scenario::{study_point as point, Row, RowFigures, Timelines};
use serde::{Deserialize, Serialize};

/// A combination a mode cannot serve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// The coherence mode.
    pub mode: StudyMode,
    /// Where the send buffer's lines started.
    pub sender: Sender,
    /// Where the receive buffer's lines started.
    pub receiver: Receiver,
    /// Where the buffers are homed.
    pub placement: Placement,
    /// Why.
    pub reason: String,
}

/// What a study runs: its size, and the transfer each point changes (its
/// machine, cost sheets and coherence options; [`StudyPoint::config_on`]
/// sets a point's fields in it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyConfig {
    /// Bytes each point sends.
    pub bytes: u64,
    /// The transfer the points change.
    pub base: protocols::transfer::Config,
}

impl StudyConfig {
    /// The study of `bytes` on scenario `base`'s machine, with its cost
    /// sheets and coherence options.
    pub fn on(base: &Scenario, bytes: u64) -> StudyConfig {
        let first = StudyPoint {
            bytes,
            ..StudyPoint::default()
        };
        StudyConfig {
            bytes,
            base: first.transfer().config_in(base, false),
        }
    }
}

/// The study's rows, in the order of its points, and its refusals, with
/// what made them (its configuration and the kit's version): its JSON
/// reads back equal, and [`run_config`] of its configuration gives it
/// again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StudyWire")]
pub struct Study {
    /// The version of the kit that ran it (`flashkit`'s package version).
    pub version: String,
    /// What it ran.
    pub config: StudyConfig,
    /// One per combination run.
    pub rows: Vec<Row>,
    /// One per combination a mode refused.
    pub refused: Vec<Refusal>,
}

/// A study's JSON as read, before its rows are held to its configuration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyWire {
    version: String,
    config: StudyConfig,
    rows: Vec<Row>,
    refused: Vec<Refusal>,
}

impl TryFrom<StudyWire> for Study {
    type Error = String;

    /// A study whose rows ran transfers other than its own points' is
    /// refused, naming the first.
    fn try_from(w: StudyWire) -> Result<Study, String> {
        for (i, r) in w.rows.iter().enumerate() {
            if r.bytes != w.config.bytes || r.point().config_on(&w.config.base) != r.config {
                return Err(format!(
                    "rows[{i}].config is not its point's transfer on the study's config.base"
                ));
            }
        }
        Ok(Study {
            version: w.version,
            config: w.config,
            rows: w.rows,
            refused: w.refused,
        })
    }
}

/// The modes in the order the study lists them: cheapest promise first.
pub const MODES: [StudyMode; 4] = [
    StudyMode::None,
    StudyMode::NoneFlush,
    StudyMode::Local,
    StudyMode::Global,
];

/// Every combination of mode, sender state, receiver state and placement
/// for `bytes`, in the order the study lists them.
pub fn points(bytes: u64) -> Vec<StudyPoint> {
    let mut v = Vec::new();
    for &mode in &MODES {
        for &sender in Sender::ALL {
            for &receiver in Receiver::ALL {
                for &placement in Placement::ALL {
                    v.push(StudyPoint {
                        mode,
                        sender,
                        receiver,
                        placement,
                        bytes,
                    });
                }
            }
        }
    }
    v
}

/// Run every point of [`points`]`(bytes)` on `base`'s machine and cost
/// sheets, on `threads` workers; `progress(done, total)` is called as
/// points finish. The rows come back in the points' order whatever the
/// threads; the first point that fails (other than by a refusal) ends the
/// study with its error.
pub fn run(
    base: &Scenario,
    bytes: u64,
    threads: usize,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<Study, RunError> {
    run_config(&StudyConfig::on(base, bytes), threads, progress)
}

/// Run the study `config` describes, as [`run`] does: what a saved study's
/// configuration gives again.
pub fn run_config(
    config: &StudyConfig,
    threads: usize,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<Study, RunError> {
    let pts = points(config.bytes);
    let total = pts.len();
    let mut study = Study {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: config.clone(),
        rows: Vec::new(),
        refused: Vec::new(),
    };
    crate::sweep::run_in_order(
        total,
        threads,
        |i| study_config(&pts[i], &config.base),
        |done| progress(done, total),
        |i, r| {
            let p = &pts[i];
            match r {
                Ok((row, _)) => study.rows.push(row),
                Err(RunError::Mode(reason)) => study.refused.push(Refusal {
                    mode: p.mode,
                    sender: p.sender,
                    receiver: p.receiver,
                    placement: p.placement,
                    reason,
                }),
                Err(e) => return Err(e),
            }
            Ok(())
        },
    )?;
    Ok(study)
}

impl std::fmt::Display for Study {
    /// The rows as a table, the refusals after them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = self.rows.first().map_or(0, |r| r.bytes);
        writeln!(
            f,
            "coherence modes, {bytes} bytes, chunked handler (C4), aligned buffers"
        )?;
        writeln!(
            f,
            "total: the sender's first flush or command to the data visible at the receiver; \
             stale: lines the receiving process would read wrong; \
             coherence: MAGIC's interventions/invalidations/fetches; \
             processor: both user processors, flushes included"
        )?;
        writeln!(f)?;
        f.write_str(&header())?;
        for r in &self.rows {
            f.write_str(&r.line())?;
        }
        if !self.refused.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "refused ({}; the JSON lists each), by reason:",
                self.refused.len()
            )?;
            let mut reasons: Vec<&str> = Vec::new();
            for r in &self.refused {
                if !reasons.contains(&r.reason.as_str()) {
                    reasons.push(&r.reason);
                }
            }
            for why in reasons {
                let these: Vec<&Refusal> =
                    self.refused.iter().filter(|r| r.reason == why).collect();
                writeln!(f, "  {} ({}): {why}", these.len(), which(&these))?;
            }
        }
        Ok(())
    }
}

/// The axes' values a group of refusals spans, leaving out an axis whose
/// every value is in it: `local; sender dirty-remote`.
fn which(these: &[&Refusal]) -> String {
    fn axis<T: PartialEq + Copy>(
        name: &str,
        all: &[T],
        of: impl Fn(&Refusal) -> T,
        these: &[&Refusal],
        label: impl Fn(T) -> String,
    ) -> Option<String> {
        let mut seen: Vec<T> = Vec::new();
        for r in these {
            let v = of(r);
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        (seen.len() < all.len()).then(|| {
            let names: Vec<String> = all
                .iter()
                .filter(|v| seen.contains(v))
                .map(|&v| label(v))
                .collect();
            format!("{name}{}", names.join(", "))
        })
    }
    let parts: Vec<String> = [
        axis("mode ", &MODES, |r| r.mode, these, StudyMode::name),
        axis("sender ", Sender::ALL, |r| r.sender, these, Sender::name),
        axis(
            "receiver ",
            Receiver::ALL,
            |r| r.receiver,
            these,
            Receiver::name,
        ),
        axis(
            "placement ",
            Placement::ALL,
            |r| r.placement,
            these,
            Placement::name,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "every combination".into()
    } else {
        parts.join("; ")
    }
}

impl Study {
    /// The rows as CSV, a header first: each row's counts and figures, by
    /// name (the configurations, the version and the refusals are in the
    /// JSON).
    pub fn csv(&self) -> String {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if let Some(m) = v.as_object_mut() {
                    m.remove("config");
                    m.remove("version");
                }
                v
            })
            .collect();
        crate::sweep::csv_table(&rows)
    }

    /// Total time by mode, grouped by sender state, for the receive buffer
    /// uncached and the buffers homed at the transferring nodes: the bars
    /// `--plot` draws.
    pub fn chart(&self) -> crate::plot::Chart {
        let groups: Vec<Sender> = Sender::ALL.to_vec();
        let series = MODES
            .iter()
            .map(|&m| crate::plot::Series {
                name: m.name(),
                points: groups
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &s)| {
                        self.rows
                            .iter()
                            .find(|r| {
                                r.mode == m
                                    && r.sender == s
                                    && r.receiver == Receiver::Uncached
                                    && r.placement == Placement::Home
                            })
                            .map(|r| (i as f64, r.total_us))
                    })
                    .collect(),
                bound: false,
            })
            .collect();
        let bytes = self.rows.first().map_or(0, |r| r.bytes);
        crate::plot::Chart {
            title: format!(
                "Transfer time by coherence mode ({bytes} bytes, receive buffer uncached, \
                 buffers homed at the transferring nodes)"
            ),
            x: "send buffer's lines".into(),
            y: "total (us)".into(),
            log_x: false,
            x_labels: groups.len(),
            groups: groups.iter().map(|s| s.name()).collect(),
            series,
        }
    }
}
