//! Typed sweeps: points built in code, as configurations of an experiment,
//! rather than from a scenario file and string keys.
//!
//! A [`TypedSweep`] is an iterator's configurations ([`TypedSweep::configs`])
//! or the cross product of axes that are closures over a base configuration
//! ([`TypedSweep::new`], [`TypedSweep::vary`]; the last axis changes
//! fastest). It runs as a [`Plan`](super::Plan) does, on the same workers
//! ([`run_in_order`]), and gives each point's [`TypedRow`]: its number, its
//! configuration and its result, typed. The flat view, a row of columns as
//! `flashkit sweep` writes them ([`TypedSweep::rows`]), is derived from
//! them: a configuration's parameters are those of the scenario that holds
//! it ([`TypedConfig::scenario`]), so a typed sweep and the string-key sweep
//! of the same points give the same rows.
//!
//! ```
//! use flashkit::protocols::transfer::{Config, SenderState, Version};
//! use flashkit::sweep::{self, TypedSweep};
//!
//! let points = TypedSweep::new(Config::default())
//!     .vary("transfer.sender", [SenderState::Uncached, SenderState::Dirty], |c, s| c.sender = s)
//!     .vary("transfer.chunk", [1, 8], |c, k| c.handler = Version::Chunked(k));
//! let typed = points.run(2, |_, _| {})?;
//! // Dirty lines, 8 a chunk, beat 1 a chunk.
//! assert!(typed[3].result.total < typed[2].result.total);
//! assert_eq!(typed[3].config.handler, Version::Chunked(8));
//! // The flat view, as `flashkit sweep` writes it.
//! let table = sweep::csv(&points.rows(&typed)?);
//! assert!(table.starts_with("point,transfer.bytes,"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{columns, run_in_order, Changed, Record, Row, SweepError, MAX_POINTS, VERSION};
use crate::scenario::{self, CostTables, RunError, Scenario, Transfer};
use protocols::transfer;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A configuration a typed sweep runs: an experiment built in code.
pub trait TypedConfig: Clone + Send + Sync + Serialize + DeserializeOwned {
    /// What a run gives.
    type Result: Clone + std::fmt::Debug + Send + Serialize + DeserializeOwned;

    /// Run the experiment, its result held to the rules every result keeps
    /// ([`crate::invariants`]) as [`scenario::run`] holds it.
    fn run(&self) -> Result<Self::Result, RunError>;

    /// The scenario that holds this configuration: its parameters, whose
    /// keys are a row's columns. A configuration that sets what no
    /// scenario holds is [`Unheld`], naming the field: a row's columns
    /// would not show it.
    fn scenario(&self) -> Result<Scenario, Unheld>;

    /// The result as JSON, whose scalars are a row's `result.*` columns.
    fn result_json(result: &Self::Result) -> serde_json::Value {
        serde_json::to_value(result).unwrap_or(serde_json::Value::Null)
    }
}

impl TypedConfig for transfer::Config {
    type Result = transfer::Outcome;

    fn run(&self) -> Result<transfer::Outcome, RunError> {
        let o = transfer::run(self)?;
        crate::invariants::check(&o.json(), &[&o.ledger], self.params.pp_issue_width)?;
        Ok(o)
    }

    /// The scenario whose `[transfer]` table, machine, cost sheets and
    /// protocol options are this configuration's. A scenario holds no page
    /// change (`change`), planted bug (`inject`, `coherence.inject`) or
    /// homing other than by address (`coherence.placement`): a
    /// configuration that sets one is [`Unheld`]. Recording a trace
    /// (`trace`, `params.trace`) changes no figure and is left out.
    fn scenario(&self) -> Result<Scenario, Unheld> {
        use scenario::{
            CoherenceKind, CoherenceOptions, DirectionKind, HandlerKind, Placement, Receiver,
            Sender, StrategyKind,
        };
        use transfer::{Direction, Mode, ReceiverState, SenderState, Strategy, Version};
        let c = self;
        let unheld = [
            ("change", c.change.is_some()),
            ("inject", c.inject.is_some()),
            ("coherence.inject", c.coherence.inject.is_some()),
            (
                "coherence.placement",
                c.coherence.placement != coherence::CohParams::default().placement,
            ),
        ];
        if let Some((field, _)) = unheld.iter().find(|u| u.1) {
            return Err(Unheld { field });
        }
        let (handler, chunk) = match c.handler {
            Version::Base => (HandlerKind::Base, Transfer::default().chunk),
            Version::Optimized => (HandlerKind::Optimized, Transfer::default().chunk),
            Version::Chunked(k) => (HandlerKind::Chunked, k),
        };
        let t = Transfer {
            bytes: c.bytes,
            sender: match c.sender {
                SenderState::Uncached => Sender::Uncached,
                SenderState::Clean => Sender::Clean,
                SenderState::Dirty => Sender::Dirty,
                SenderState::DirtyRemote => Sender::DirtyRemote,
            },
            receiver: match c.receiver {
                ReceiverState::Uncached => Receiver::Uncached,
                ReceiverState::Clean => Receiver::Clean,
                ReceiverState::Dirty => Receiver::Dirty,
                ReceiverState::CleanRemote => Receiver::CleanRemote,
                ReceiverState::DirtyRemote => Receiver::DirtyRemote,
            },
            handler,
            chunk,
            src_offset: c.src_offset,
            dst_offset: c.dst_offset,
            coherence: match c.mode {
                Mode::Local => CoherenceKind::Local,
                Mode::None => CoherenceKind::None,
                Mode::Global => CoherenceKind::Global,
            },
            flush: c.flush,
            strategy: match c.strategy {
                Strategy::Pipelined => StrategyKind::Pipelined,
                Strategy::Collect => StrategyKind::Collect,
            },
            placement: match c.placement {
                transfer::Placement::Home => Placement::Home,
                transfer::Placement::Third => Placement::Third,
            },
            direction: match c.direction {
                Direction::Uni => DirectionKind::Uni,
                Direction::Bi => DirectionKind::Bi,
            },
            receives: c.receives,
            sends: c.sends,
            receive_first: c.receive_first,
        };
        let mut machine = c.params.clone();
        machine.trace = false;
        Ok(Scenario {
            machine,
            costs: CostTables {
                transfer: c.costs,
                command: c.command_costs,
                coherence: c.coherence.costs,
                flush: c.flush_costs,
                ..CostTables::default()
            },
            coherence: CoherenceOptions {
                directory: c.coherence.format,
                pointer_store: c.coherence.pointer_store,
                acks: c.coherence.acks,
                hints: c.coherence.hints,
                forwards: c.coherence.forwards,
            },
            transfer: Some(t),
            ..Scenario::default()
        })
    }
}

/// A configuration that sets what no scenario holds (a transfer's page
/// change, a planted bug): its typed row keeps it, but a row's columns and a
/// record's scenario could not show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} is set, and a scenario cannot hold it: keep the typed rows")]
pub struct Unheld {
    /// The configuration's field, dotted (`change`, `coherence.inject`).
    pub field: &'static str,
}

/// One point of a typed sweep: its number, its configuration and its
/// result. [`TypedSweep::rows`] gives its flat view.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "C: TypedConfig", deserialize = "C: TypedConfig"))]
pub struct TypedRow<C: TypedConfig> {
    /// The point's number.
    pub point: usize,
    /// The configuration it ran.
    pub config: C,
    /// What the run gave.
    pub result: C::Result,
}

impl<C: TypedConfig> TypedRow<C> {
    /// The row as a [`Record`]: its number, the kit's version, the
    /// scenario that holds its configuration and its result's JSON, as a
    /// line of `flashkit sweep --format jsonl` has them ([`super::jsonl`]
    /// writes it; [`crate::plot::from_jsonl`] plots it).
    /// A configuration a scenario cannot hold is
    /// [`SweepError::Unheld`].
    pub fn record(&self) -> Result<Record, SweepError> {
        Ok(Record {
            point: self.point,
            version: VERSION.to_string(),
            config: self.scenario()?,
            result: C::result_json(&self.result),
        })
    }

    fn scenario(&self) -> Result<Scenario, SweepError> {
        self.config.scenario().map_err(|error| SweepError::Unheld {
            index: self.point,
            error,
        })
    }
}

/// Sets one axis's value on a configuration.
type Setter<C> = Arc<dyn Fn(&mut C) + Send + Sync>;

/// A typed axis: a setter a value.
struct TypedAxis<C> {
    values: Vec<Setter<C>>,
}

enum Points<C> {
    List(Vec<C>),
    Axes { base: C, axes: Vec<TypedAxis<C>> },
}

/// A sweep of configurations built in code (the module's documentation
/// shows one).
pub struct TypedSweep<C: TypedConfig> {
    points: Points<C>,
    names: Vec<String>,
    /// The first axis given no values.
    empty: Option<String>,
    /// The number of values on each axis (a list's configurations first),
    /// once they make more than [`MAX_POINTS`] points: no axis after is
    /// built, only counted. `None` while the sweep is within the limit.
    too_many: Option<Vec<usize>>,
}

/// The iterator's length, where it knows it exactly.
fn exact_len(it: &impl Iterator) -> Option<usize> {
    match it.size_hint() {
        (lo, Some(hi)) if lo == hi => Some(lo),
        _ => None,
    }
}

/// How many values an axis has: `known` where the iterator knew, else the
/// `kept` it was read for (at most [`MAX_POINTS`] + 1). One read that far
/// has more values than a sweep may have points, and is not read on (an
/// endless one would never end): `usize::MAX`, "more than the limit".
fn counted(known: Option<usize>, kept: usize) -> usize {
    match known {
        Some(n) => n,
        None if kept > MAX_POINTS => usize::MAX,
        None => kept,
    }
}

impl<C: TypedConfig> TypedSweep<C> {
    /// The cross product of the axes [`TypedSweep::vary`] adds to `base`
    /// (with none, `base` alone).
    pub fn new(base: C) -> Self {
        TypedSweep {
            points: Points::Axes {
                base,
                axes: Vec::new(),
            },
            names: Vec::new(),
            empty: None,
            too_many: None,
        }
    }

    /// The configurations of `points`, in order: point `i` is the `i`th.
    pub fn configs(points: impl IntoIterator<Item = C>) -> Self {
        let mut points = points.into_iter();
        let known = exact_len(&points);
        // Too many by the iterator's own count: none built.
        let room = match known {
            Some(n) if n > MAX_POINTS => 0,
            _ => MAX_POINTS + 1,
        };
        let list: Vec<C> = points.by_ref().take(room).collect();
        let n = counted(known, list.len());
        TypedSweep {
            too_many: (n > MAX_POINTS).then(|| vec![n]),
            // No configuration is no sweep, as an axis of no values is not.
            empty: (n == 0).then(|| "configs".to_string()),
            points: Points::List(list),
            names: Vec::new(),
        }
    }

    /// The number of values on each axis as built (a list's
    /// configurations as one).
    fn sizes(&self) -> Vec<usize> {
        match &self.points {
            Points::List(list) => vec![list.len()],
            Points::Axes { axes, .. } => axes.iter().map(|a| a.values.len()).collect(),
        }
    }

    /// Add an axis (the last added changes fastest): `set` puts each of
    /// `values` into the configuration. `name` is the column it varies
    /// (`transfer.chunk`, `machine.net_latency`): a parameter of the
    /// machine, the cost sheets, the networks or the protocol options so
    /// named is a column of every row, as a string-key sweep's axis is.
    /// On a sweep of [`TypedSweep::configs`], the axis applies to each.
    /// Values that would make more than [`MAX_POINTS`] points are not
    /// kept, only counted (at once where the iterator knows its length,
    /// as a range or a vector does; one that does not is read no further
    /// than the limit, so an endless one is refused too), and
    /// [`TypedSweep::total`] says so.
    pub fn vary<V, I, F>(mut self, name: &str, values: I, set: F) -> Self
    where
        V: Clone + Send + Sync + 'static,
        I: IntoIterator<Item = V>,
        F: Fn(&mut C, V) + Send + Sync + 'static,
    {
        let set = Arc::new(set);
        let mut values = values.into_iter();
        // No more values are kept than a sweep may have points, and none
        // once the sweep is too large already or by the iterator's own
        // count: past that, the axis is counted, not stored.
        let known = exact_len(&values);
        let sizes = self.sizes();
        let built: usize = sizes.iter().product();
        let room = match known {
            _ if self.too_many.is_some() => 0,
            Some(n) if built.saturating_mul(n) > MAX_POINTS => 0,
            _ => MAX_POINTS + 1,
        };
        let kept: Vec<Setter<C>> = values
            .by_ref()
            .take(room)
            .map(|v| {
                let set = Arc::clone(&set);
                Arc::new(move |c: &mut C| set(c, v.clone())) as Setter<C>
            })
            .collect();
        // An iterator that does not know its length, read to the limit.
        let n = known.unwrap_or_else(|| {
            let more = values.take(MAX_POINTS + 1 - kept.len()).count();
            counted(None, kept.len() + more)
        });
        self.names.push(name.to_string());
        if n == 0 {
            self.empty.get_or_insert_with(|| name.to_string());
        }
        if self.too_many.is_some() || built.saturating_mul(n) > MAX_POINTS {
            let mut axes = self.too_many.take().unwrap_or(sizes);
            axes.push(n);
            self.too_many = Some(axes);
            return self;
        }
        let axis = TypedAxis { values: kept };
        match &mut self.points {
            Points::Axes { axes, .. } => axes.push(axis),
            Points::List(list) => {
                let mut out = Vec::with_capacity(list.len() * axis.values.len());
                for c in list.drain(..) {
                    for s in &axis.values {
                        let mut c = c.clone();
                        s(&mut c);
                        out.push(c);
                    }
                }
                *list = out;
            }
        }
        self
    }

    /// How many points the sweep has. An axis given no values is
    /// [`SweepError::Axis`] (not a sweep of no points), a name given two
    /// axes [`SweepError::Twice`], more than [`MAX_POINTS`] points
    /// [`SweepError::TooMany`].
    pub fn total(&self) -> Result<usize, SweepError> {
        if let Some(name) = &self.empty {
            return Err(SweepError::Axis {
                given: name.clone(),
                why: "no values".into(),
            });
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(n) = self.names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(SweepError::Twice { key: n.clone() });
        }
        match &self.too_many {
            Some(axes) => Err(SweepError::TooMany { axes: axes.clone() }),
            // Kept within the limit as built (`configs`, `vary`).
            None => Ok(self.sizes().iter().product()),
        }
    }

    /// The configuration of point `index`.
    pub fn point(&self, index: usize) -> Result<C, SweepError> {
        let total = self.total()?;
        if index >= total {
            return Err(SweepError::NoPoint { index, total });
        }
        Ok(match &self.points {
            Points::List(l) => l[index].clone(),
            Points::Axes { base, axes } => {
                let mut c = base.clone();
                let mut rest = index;
                let mut setters = Vec::with_capacity(axes.len());
                for a in axes.iter().rev() {
                    setters.push(&a.values[rest % a.values.len()]);
                    rest /= a.values.len();
                }
                // The first axis's value set first.
                for s in setters.into_iter().rev() {
                    s(&mut c);
                }
                c
            }
        })
    }

    /// Run every point on `threads` workers, as [`super::Plan::run`] does,
    /// and return each point's [`TypedRow`] in point order;
    /// `progress(done, total)` is called as points finish. The first point
    /// that fails ends the sweep with its error.
    pub fn run(
        &self,
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
    ) -> Result<Vec<TypedRow<C>>, SweepError> {
        let total = self.total()?;
        let mut rows = Vec::with_capacity(total);
        run_in_order(
            total,
            threads,
            |i| {
                let config = self.point(i)?;
                let result = config.run().map_err(|error| SweepError::Run {
                    index: i,
                    error: Box::new(error),
                })?;
                Ok(TypedRow {
                    point: i,
                    config,
                    result,
                })
            },
            |done| progress(done, total),
            |_, r: Result<TypedRow<C>, SweepError>| {
                rows.push(r?);
                Ok::<(), SweepError>(())
            },
        )?;
        Ok(rows)
    }

    /// The flat view of `rows` (this sweep's): each row's columns as
    /// [`super::Plan::row`] makes them for the scenario that holds its
    /// configuration. The machine's, cost sheets', networks' and protocol
    /// options' columns are those an axis names and those some row sets
    /// away from their defaults. A configuration a scenario cannot hold
    /// is [`SweepError::Unheld`].
    pub fn rows(&self, rows: &[TypedRow<C>]) -> Result<Vec<Row>, SweepError> {
        let scenarios = rows
            .iter()
            .map(TypedRow::scenario)
            .collect::<Result<Vec<Scenario>, _>>()?;
        let mut keep = Changed::new();
        keep.changed.extend(self.names.iter().cloned());
        for sc in &scenarios {
            keep.note(sc);
        }
        Ok(rows
            .iter()
            .zip(&scenarios)
            .map(|(r, sc)| columns(&keep, r.point, sc, &C::result_json(&r.result)))
            .collect())
    }
}
