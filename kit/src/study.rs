//! The coherence-mode study: the same transfer under each way of keeping
//! message data coherent, for each state the buffers can start in, side by
//! side. A row says what a mode costs (time, bandwidth, the coherence
//! actions MAGIC took, the user's processor time with its flushes) and
//! what it buys (`stale_lines`: lines the receiving process would read
//! wrong). A combination a mode cannot serve is listed with its reason.
//!
//! A row carries the transfer its point ran and the kit's version, and
//! keeps its cycle counts beside the figures derived from them; the study
//! carries its [`StudyConfig`]. Both read back equal from their JSON, and
//! [`run_config`] (or [`crate::scenario::study_config`], for a row) runs a
//! saved one again.
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
//! // A row read back from its JSON is the row; its configuration runs it again.
//! let back: study::Row = serde_json::from_str(&serde_json::to_string(&local).unwrap()).unwrap();
//! assert_eq!(back, local);
//! let (again, _) = flashkit::scenario::study_config(&back.point(), &back.config).unwrap();
//! assert_eq!(again, local);
//! ```

use crate::scenario::{
    header, study_config, Placement, Receiver, RunError, Scenario, Sender, StudyMode,
};
pub use crate::scenario::{
    study_point as point, study_points as points, Refusal, Row, RowFigures, Study, StudyConfig,
    Timelines, STUDY_MODES as MODES,
};

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
    let mut study = Study::new(config.clone());
    crate::sweep::run_in_order(
        total,
        threads,
        |i| study_config(&pts[i], &config.base),
        |done| progress(done, total),
        |i, r| study.add(&pts[i], r),
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
