//! The vocabulary of handler costs: what a protocol's cost sheet is made of.
//!
//! Every constant a handler charges lives in its protocol's *cost sheet*, a
//! struct declared with [`cost_sheet!`](crate::cost_sheet): one field per
//! constant, each with its default and its provenance ([`Source`]). The sheet
//! is the one place a handler takes its counts from (no number is passed to
//! [`Cx::instr`](crate::Cx::instr) or [`Cx::bundles`](crate::Cx::bundles) in
//! protocol code), it deserializes from a scenario's `[costs.NAME]` table
//! (unknown keys refused, missing keys kept at their defaults, and so are
//! the parts of a task its own table leaves out), it lists
//! itself ([`Sheet::entries`]) so the documentation renders from the code,
//! and it checks itself ([`Sheet::validate`], [`Sheet::validate_on`]).
//!
//! One range for every cost, here and in every other table of costs the kit
//! has: a count (instructions, bundles, loads, stores, cycles of its clock)
//! is from 0 to [`MAX_COST`]. A [`Task`] must also be one its PP can issue:
//! its loads and stores are among its instructions (`loads + stores <=
//! instrs`), and its instructions fit its bundles at the PP's issue width
//! (`instrs <= pp_issue_width x cycles`), which only the machine knows.
//! An error names the entry as a scenario spells it
//! (`costs.toy.decode.instrs`).
//!
//! ```
//! use magic::costs::{Sheet, Source, Task};
//!
//! magic::cost_sheet! {
//!     /// A toy protocol's costs.
//!     pub struct ToyCosts in "costs.toy" {
//!         /// Decode the header and load the record.
//!         decode: Task = Task::new(3, 5, 1, 0),
//!             Source::Choice("two bundles of decode, one load-use stall");
//!         /// Instructions per word copied.
//!         per_word: u32 = 2, Source::Published("the toy paper, Table 1");
//!         /// Store the result: its address and the store.
//!         store: u32 = 2, Source::Choice("two instructions"),
//!             from 1: "the store is one of its instructions";
//!     }
//! }
//!
//! let c: ToyCosts = toml::from_str("per_word = 3").unwrap();
//! assert_eq!(c.per_word, 3);
//! assert_eq!(c.decode, Task::new(3, 5, 1, 0)); // kept at its default
//! // A task's table sets some parts; the others keep theirs.
//! let c: ToyCosts = toml::from_str("[decode]\nloads = 2").unwrap();
//! assert_eq!(c.decode, Task::new(3, 5, 2, 0));
//! assert!(toml::from_str::<ToyCosts>("per_wrd = 3").is_err());
//! assert_eq!(c.entries()[1].key, "per_word");
//! assert!(c.validate_on(2).is_ok());
//!
//! // Five instructions in three bundles need a PP of issue width 2.
//! let e = c.validate_on(1).unwrap_err();
//! assert_eq!(e.to_string(),
//!     "costs.toy.decode.instrs must be at most 3 (issue width 1 x 3 cycles), got 5");
//! let big: ToyCosts = toml::from_str("per_word = 4294967295").unwrap();
//! assert_eq!(big.validate().unwrap_err().field, "costs.toy.per_word");
//! // A count that pays for a store starts at it.
//! let none: ToyCosts = toml::from_str("store = 0").unwrap();
//! assert_eq!(none.validate().unwrap_err().to_string(),
//!     "costs.toy.store must be from 1 to 1000000 (the store is one of its instructions), got 0");
//! assert_eq!(none.entries()[2].range, "1 to 1000000 (the store is one of its instructions)");
//! ```

use crate::cx::Cx;
use crate::error::OutOfRange;
use serde::{Deserialize, Serialize};

pub use crate::params::MAX_COST;

/// The names an entry is checked under, as a scenario spells them: the
/// entry (`costs.transfer.send_init`) and, for a [`Task`], its four parts
/// (`costs.transfer.send_init.loads`). [`cost_sheet!`](crate::cost_sheet)
/// makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Names {
    /// The entry.
    pub entry: &'static str,
    /// Its bundles (a task's).
    pub cycles: &'static str,
    /// Its instructions (a task's).
    pub instrs: &'static str,
    /// Its loads (a task's).
    pub loads: &'static str,
    /// Its stores (a task's).
    pub stores: &'static str,
}

/// What a sheet's entries are: a [`Task`] or a count, each checked against
/// the one range ([`MAX_COST`]) and, a task, against the PP that issues it.
pub trait Cost: Copy + Into<Value> {
    /// The entry's range, in words, as docs/costs.md lists it.
    const RANGE: &'static str;

    /// What a scenario's table may set of the entry: the whole count, or
    /// any of a task's parts ([`TaskPatch`]), the rest keeping their
    /// values.
    type Patch: serde::de::DeserializeOwned;

    /// Set what `p` sets.
    fn patch(&mut self, p: Self::Patch);

    /// `Err` naming the part out of its range; with `issue_width`, also
    /// what the PP cannot issue. `least` is the entry's own least value
    /// and why (a count that pays for a load or a store of MAGIC memory
    /// cannot be below the accesses it pays for): a count's range starts
    /// there, a task's instructions do.
    fn check(
        &self,
        names: &Names,
        least: Least,
        issue_width: Option<u32>,
    ) -> Result<(), OutOfRange>;
}

/// An entry's least value and the reason for it (`0` and no reason for
/// most: any count from 0 is possible). Declared in
/// [`cost_sheet!`](crate::cost_sheet) as `from 1: "why"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Least {
    /// The least value.
    pub value: u64,
    /// Why it cannot be less.
    pub why: &'static str,
}

fn count(field: &'static str, n: u64, least: Least) -> Result<(), OutOfRange> {
    if least.value == 0 {
        return OutOfRange::check(field, n, 0, MAX_COST);
    }
    if n < least.value || n > MAX_COST {
        let allowed = format!("from {} to {MAX_COST} ({})", least.value, least.why);
        return Err(OutOfRange::new(field, allowed, n));
    }
    Ok(())
}

impl Cost for u32 {
    const RANGE: &'static str = "0 to 1000000";
    type Patch = u32;
    fn patch(&mut self, p: u32) {
        *self = p;
    }
    fn check(&self, names: &Names, least: Least, _: Option<u32>) -> Result<(), OutOfRange> {
        count(names.entry, u64::from(*self), least)
    }
}

impl Cost for u64 {
    const RANGE: &'static str = "0 to 1000000";
    type Patch = u64;
    fn patch(&mut self, p: u64) {
        *self = p;
    }
    fn check(&self, names: &Names, least: Least, _: Option<u32>) -> Result<(), OutOfRange> {
        count(names.entry, *self, least)
    }
}

impl Cost for crate::Cycles {
    const RANGE: &'static str = "0 to 1000000";
    type Patch = crate::Cycles;
    fn patch(&mut self, p: crate::Cycles) {
        *self = p;
    }
    fn check(&self, names: &Names, least: Least, _: Option<u32>) -> Result<(), OutOfRange> {
        count(names.entry, self.0, least)
    }
}

impl Cost for Task {
    const RANGE: &'static str = "a task: each part 0 to 1000000";
    type Patch = TaskPatch;
    fn patch(&mut self, p: TaskPatch) {
        let TaskPatch {
            cycles,
            instrs,
            loads,
            stores,
        } = p;
        self.cycles = cycles.unwrap_or(self.cycles);
        self.instrs = instrs.unwrap_or(self.instrs);
        self.loads = loads.unwrap_or(self.loads);
        self.stores = stores.unwrap_or(self.stores);
    }
    fn check(
        &self,
        names: &Names,
        least: Least,
        issue_width: Option<u32>,
    ) -> Result<(), OutOfRange> {
        self.validate(names, issue_width)?;
        count(names.instrs, u64::from(self.instrs), least)
    }
}

/// The parts of a [`Task`] a scenario's `[costs.NAME.task]` table sets:
/// each left out keeps the sheet's value (`loads = 1` alone changes only
/// the loads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskPatch {
    /// Bundles, if set.
    pub cycles: Option<u32>,
    /// Instructions, if set.
    pub instrs: Option<u32>,
    /// Loads, if set.
    pub loads: Option<u32>,
    /// Stores, if set.
    pub stores: Option<u32>,
}

/// A hand-scheduled run of protocol-processor bundles: `cycles` bundles
/// holding `instrs` instructions, with `loads` and `stores` of MAGIC memory
/// among them (each goes through the data cache).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Bundles issued: the PP cycles the task takes with no cache miss.
    pub cycles: u32,
    /// Instructions among the bundles (the ledger counts them).
    pub instrs: u32,
    /// Loads of MAGIC memory among the instructions.
    pub loads: u32,
    /// Stores of MAGIC memory among the instructions.
    pub stores: u32,
}

impl Task {
    /// A task of `cycles` bundles holding `instrs` instructions, `loads` and
    /// `stores` among them.
    pub const fn new(cycles: u32, instrs: u32, loads: u32, stores: u32) -> Task {
        Task {
            cycles,
            instrs,
            loads,
            stores,
        }
    }

    /// Run the task on `cx`: its bundles, its first load at `first` (a
    /// directory entry, say), its other loads at `record + 8i` and its
    /// stores at `record + 64 + 8i` (an operation record).
    pub fn charge<S>(&self, cx: &mut Cx<'_, S>, first: u64, record: u64) {
        cx.bundles(self.cycles, self.instrs);
        self.touch(cx, first, record);
    }

    /// The task's loads and stores alone (its bundles charged apart, as a
    /// task split around an issue is), at the addresses `charge` uses.
    pub fn touch<S>(&self, cx: &mut Cx<'_, S>, first: u64, record: u64) {
        for i in 0..self.loads {
            cx.load(if i == 0 { first } else { record + i as u64 * 8 });
        }
        for i in 0..self.stores {
            cx.store(record + 64 + i as u64 * 8);
        }
    }

    /// Run the task with every load and store at `addr + 8i`: one
    /// structure's words (a directory entry and its neighbours, say).
    pub fn charge_on<S>(&self, cx: &mut Cx<'_, S>, addr: u64) {
        cx.bundles(self.cycles, self.instrs);
        for i in 0..self.loads {
            cx.load(addr + i as u64 * 8);
        }
        for i in 0..self.stores {
            cx.store(addr + i as u64 * 8);
        }
    }

    /// What [`Cx::instr`] charges for `n` instructions on a PP issuing
    /// `width` a cycle, as a task with no loads or stores.
    pub const fn instrs(n: u32, width: u32) -> Task {
        Task::new(n.div_ceil(if width == 0 { 1 } else { width }), n, 0, 0)
    }

    /// Checks that the task can be: each part from 0 to [`MAX_COST`], its
    /// loads and stores among its instructions, and, given the PP's
    /// `issue_width`, its instructions within its bundles. The error names
    /// the part at fault as `names` spells it.
    ///
    /// ```
    /// use magic::costs::{Names, Task};
    /// let n = Names { entry: "t", cycles: "t.cycles", instrs: "t.instrs",
    ///                 loads: "t.loads", stores: "t.stores" };
    /// assert!(Task::new(9, 10, 4, 0).validate(&n, Some(2)).is_ok());
    /// let e = Task::new(1, 1000, 0, 0).validate(&n, Some(2)).unwrap_err();
    /// assert_eq!(e.to_string(), "t.instrs must be at most 2 (issue width 2 x 1 cycles), got 1000");
    /// let e = Task::new(9, 10, 4_294_967_295, 0).validate(&n, None).unwrap_err();
    /// assert_eq!(e.to_string(), "t.loads must be from 0 to 1000000, got 4294967295");
    /// let e = Task::new(9, 10, 8, 3).validate(&n, None).unwrap_err();
    /// assert_eq!(e.to_string(), "t.stores must be at most 2 (10 instructions, 8 of them loads), got 3");
    /// ```
    pub fn validate(&self, names: &Names, issue_width: Option<u32>) -> Result<(), OutOfRange> {
        let any = Least::default();
        count(names.cycles, u64::from(self.cycles), any)?;
        count(names.instrs, u64::from(self.instrs), any)?;
        count(names.loads, u64::from(self.loads), any)?;
        count(names.stores, u64::from(self.stores), any)?;
        if self.loads > self.instrs {
            let allowed = format!("at most {} (the task's instructions)", self.instrs);
            return Err(OutOfRange::new(names.loads, allowed, self.loads));
        }
        if self.loads + self.stores > self.instrs {
            let allowed = format!(
                "at most {} ({} instructions, {} of them loads)",
                self.instrs - self.loads,
                self.instrs,
                self.loads
            );
            return Err(OutOfRange::new(names.stores, allowed, self.stores));
        }
        if let Some(w) = issue_width {
            let most = u64::from(w) * u64::from(self.cycles);
            if u64::from(self.instrs) > most {
                let allowed = format!("at most {most} (issue width {w} x {} cycles)", self.cycles);
                return Err(OutOfRange::new(names.instrs, allowed, self.instrs));
            }
        }
        Ok(())
    }

    /// The same task repeated `n` times (a per-item cost times the items);
    /// `None` if a count would pass `u32::MAX`.
    pub const fn times(self, n: u32) -> Option<Task> {
        match (
            self.cycles.checked_mul(n),
            self.instrs.checked_mul(n),
            self.loads.checked_mul(n),
            self.stores.checked_mul(n),
        ) {
            (Some(cycles), Some(instrs), Some(loads), Some(stores)) => Some(Task {
                cycles,
                instrs,
                loads,
                stores,
            }),
            _ => None,
        }
    }
}

/// What one handler invocation charged, task by task: the instructions of
/// each row (a protocol's names for its tasks, such as the rows of the
/// FLASH paper's Table 2), in the order the rows were first charged, and
/// the totals.
///
/// ```
/// use magic::costs::{Breakdown, Task};
///
/// let mut b = Breakdown::default();
/// b.add("decode", &Task::new(2, 3, 1, 0));
/// b.add("send", &Task::new(1, 2, 0, 1));
/// b.add("decode", &Task::new(1, 1, 0, 0));
/// assert_eq!(b.tasks.to_vec(), vec![("decode", 4), ("send", 2)]);
/// assert_eq!((b.instructions, b.loads, b.stores), (6, 1, 1));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    /// Instructions by row. At most a dozen rows are kept inline, so an
    /// invocation's accounting does not allocate.
    pub tasks: smallvec::SmallVec<[(&'static str, u64); 12]>,
    /// Instructions in all.
    pub instructions: u64,
    /// Loads of MAGIC memory.
    pub loads: u64,
    /// Stores of MAGIC memory.
    pub stores: u64,
}

impl Breakdown {
    /// Count task `t` under `row`: its instructions join the row's (a row
    /// not seen before is appended), and its instructions, loads and stores
    /// join the totals. Charging the task is the caller's (see
    /// [`Task::charge`]); this only keeps the account.
    pub fn add(&mut self, row: &'static str, t: &Task) {
        let instrs = u64::from(t.instrs);
        match self.tasks.iter_mut().find(|x| x.0 == row) {
            Some(x) => x.1 += instrs,
            None => self.tasks.push((row, instrs)),
        }
        self.instructions += instrs;
        self.loads += u64::from(t.loads);
        self.stores += u64::from(t.stores);
    }
}

/// Where a cost comes from: the reason it has the value it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Source {
    /// A figure from the literature, with where it is (table, figure).
    Published(&'static str),
    /// Worked out from published figures: which, and how.
    Derived(&'static str),
    /// The model's choice where the literature is silent, with the reasoning.
    Choice(&'static str),
}

impl Source {
    /// `published`, `derived` or `model choice`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Published(_) => "published",
            Source::Derived(_) => "derived",
            Source::Choice(_) => "model choice",
        }
    }

    /// The citation or the reasoning.
    pub fn why(&self) -> &'static str {
        match self {
            Source::Published(s) | Source::Derived(s) | Source::Choice(s) => s,
        }
    }
}

/// A cost's value: a scheduled task or a plain count (instructions, cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Value {
    /// Bundles, instructions, loads and stores.
    Task(Task),
    /// A count; the entry's description says of what.
    Count(u64),
}

impl From<Task> for Value {
    fn from(t: Task) -> Value {
        Value::Task(t)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Count(n as u64)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Count(n)
    }
}

impl From<crate::Cycles> for Value {
    fn from(c: crate::Cycles) -> Value {
        Value::Count(c.0)
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Task(t) => write!(
                f,
                "{} cycles, {} instr, {} ld / {} st",
                t.cycles, t.instrs, t.loads, t.stores
            ),
            Value::Count(n) => write!(f, "{n}"),
        }
    }
}

/// One line of a cost sheet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The field's name: the key a scenario's `[costs.NAME]` table sets.
    pub key: &'static str,
    /// What it pays for.
    pub doc: &'static str,
    /// Its current value.
    pub value: Value,
    /// What it may hold ([`Cost::RANGE`]).
    pub range: &'static str,
    /// Why it has its default value.
    pub source: Source,
}

/// A protocol's cost sheet (declared with [`cost_sheet!`](crate::cost_sheet)).
pub trait Sheet {
    /// The scenario table that sets it (`costs.transfer`): the prefix of
    /// its entries' names in errors.
    fn table(&self) -> &'static str;

    /// Every entry, in declaration order.
    fn entries(&self) -> Vec<Entry>;

    /// Checks every entry, and with `issue_width` every task against the
    /// PP that issues it; [`Sheet::validate`] and [`Sheet::validate_on`]
    /// say which.
    fn check(&self, issue_width: Option<u32>) -> Result<(), OutOfRange>;

    /// Checks what needs no machine: every count, and every part of every
    /// task, from 0 to [`MAX_COST`]; a task's loads and stores among its
    /// instructions. The error names the first entry at fault
    /// (`costs.transfer.send_init.loads`).
    fn validate(&self) -> Result<(), OutOfRange> {
        self.check(None)
    }

    /// [`Sheet::validate`], and every task's instructions within its
    /// bundles on a PP issuing `issue_width` a cycle: what a machine
    /// running the sheet's handlers checks when it is built.
    fn validate_on(&self, issue_width: u32) -> Result<(), OutOfRange> {
        self.check(Some(issue_width))
    }
}

/// A sheet as a Markdown table (key, value, range, provenance, what it
/// pays for).
pub fn markdown(sheet: &dyn Sheet) -> String {
    let mut s =
        String::from("| key | default | range | source | what it pays for; why this value |\n");
    s.push_str("|---|---|---|---|---|\n");
    for e in sheet.entries() {
        let cell = |x: &str| x.replace('|', "\\|").replace('\n', " ");
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} {} |\n",
            e.key,
            e.value,
            e.range,
            e.source.kind(),
            cell(e.doc.trim()),
            cell(e.source.why())
        ));
    }
    s
}

/// Declare a cost sheet: a struct of costs, named with the scenario table
/// that sets it (`struct TransferCosts in "costs.transfer"`), each cost with
/// its doc comment, its default and its [`Source`](crate::costs::Source);
/// each cost is a [`Task`](crate::costs::Task), a `u32`, a `u64` or
/// [`Cycles`](crate::Cycles). A count that pays for loads or stores of
/// MAGIC memory (which are among its instructions) says so with its least
/// value and why, after its source: `..., Source::Choice("..."), from 1:
/// "the write's store into the record";` (its range is then from there to
/// [`MAX_COST`](crate::costs::MAX_COST)).
///
/// The struct derives `Default` (the defaults given) and `Serialize`, and
/// deserializes from a partial table: an entry left out keeps its default,
/// and so does a part of a task left out of the task's table
/// (`[costs.transfer.send_init]` with `loads = 1` alone); an unknown key is
/// an error naming it. It implements [`Sheet`](crate::costs::Sheet), which
/// checks every entry. The calling crate needs `serde` with its derive
/// feature. See the [module docs](crate::costs).
#[macro_export]
macro_rules! cost_sheet {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $table:literal {
            $(
                $(#[doc = $doc:literal])+
                $field:ident : $ty:ty = $default:expr, $source:expr
                    $(, from $least:literal : $why:literal)?;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
        $vis struct $name {
            $(
                $(#[doc = $doc])+
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        /// A partial table over the defaults: each entry set replaces its
        /// default (a task's parts one by one), an unknown key is an error.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // Named as the sheet, so that serde's errors name it.
                #[derive(serde::Deserialize)]
                #[serde(deny_unknown_fields)]
                struct $name {
                    $(
                        #[serde(default)]
                        $field: Option<<$ty as $crate::costs::Cost>::Patch>,
                    )*
                }
                let given = <$name as serde::Deserialize>::deserialize(d)?;
                #[allow(unused_mut)]
                let mut sheet = <Self as Default>::default();
                $(
                    if let Some(p) = given.$field {
                        $crate::costs::Cost::patch(&mut sheet.$field, p);
                    }
                )*
                Ok(sheet)
            }
        }

        impl $crate::costs::Sheet for $name {
            fn table(&self) -> &'static str {
                $table
            }

            fn entries(&self) -> Vec<$crate::costs::Entry> {
                vec![$(
                    $crate::costs::Entry {
                        key: stringify!($field),
                        doc: concat!($($doc),+),
                        value: $crate::costs::Value::from(self.$field),
                        // The entry's own range where it has a least value.
                        range: *[
                            <$ty as $crate::costs::Cost>::RANGE,
                            $(concat!($least, " to 1000000 (", $why, ")"),)?
                        ]
                        .last()
                        .unwrap_or(&""),
                        source: $source,
                    },
                )*]
            }

            fn check(&self, issue_width: Option<u32>) -> Result<(), $crate::OutOfRange> {
                $(
                    $crate::costs::Cost::check(
                        &self.$field,
                        &$crate::costs::Names {
                            entry: concat!($table, ".", stringify!($field)),
                            cycles: concat!($table, ".", stringify!($field), ".cycles"),
                            instrs: concat!($table, ".", stringify!($field), ".instrs"),
                            loads: concat!($table, ".", stringify!($field), ".loads"),
                            stores: concat!($table, ".", stringify!($field), ".stores"),
                        },
                        *[
                            $crate::costs::Least::default(),
                            $($crate::costs::Least { value: $least, why: $why },)?
                        ]
                        .last()
                        .unwrap_or(&$crate::costs::Least::default()),
                        issue_width,
                    )?;
                )*
                Ok(())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::cost_sheet! {
        /// A sheet for the tests.
        struct Two in "costs.two" {
            /// A task.
            a: Task = Task::new(2, 3, 1, 0), Source::Published("here");
            /// A count
            /// over two lines.
            b: u32 = 7, Source::Choice("because");
        }
    }

    #[test]
    fn a_sheet_lists_itself_and_renders() {
        let t = Two::default();
        let e = t.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].doc, " A count over two lines.");
        let md = markdown(&t);
        assert!(md.contains(
            "| `a` | 2 cycles, 3 instr, 1 ld / 0 st | a task: each part 0 to 1000000 | published | A task. here |"
        ));
        assert!(md.contains(
            "| `b` | 7 | 0 to 1000000 | model choice | A count over two lines. because |"
        ));
        assert_eq!(t.table(), "costs.two");
    }

    #[test]
    fn a_sheet_checks_every_part_of_every_entry() {
        let ok = Two::default();
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.validate_on(2), Ok(()));
        // Three instructions in two bundles need a dual-issue PP.
        let e = ok.validate_on(1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "costs.two.a.instrs must be at most 2 (issue width 1 x 2 cycles), got 3"
        );
        let cases: [(Two, Option<u32>, &str, &str); 7] = [
            (
                Two { b: 1_000_001, ..ok },
                None,
                "costs.two.b",
                "from 0 to 1000000",
            ),
            (
                Two {
                    a: Task::new(1_000_001, 3, 1, 0),
                    ..ok
                },
                None,
                "costs.two.a.cycles",
                "from 0 to 1000000",
            ),
            (
                Two {
                    a: Task::new(2, u32::MAX, 1, 0),
                    ..ok
                },
                None,
                "costs.two.a.instrs",
                "from 0 to 1000000",
            ),
            (
                Two {
                    a: Task::new(2, 3, u32::MAX, 0),
                    ..ok
                },
                None,
                "costs.two.a.loads",
                "from 0 to 1000000",
            ),
            (
                Two {
                    a: Task::new(2, 3, 0, 1_000_001),
                    ..ok
                },
                None,
                "costs.two.a.stores",
                "from 0 to 1000000",
            ),
            (
                Two {
                    a: Task::new(2, 3, 4, 0),
                    ..ok
                },
                None,
                "costs.two.a.loads",
                "at most 3 (the task's instructions)",
            ),
            (
                Two {
                    a: Task::new(1, 1000, 0, 0),
                    ..ok
                },
                Some(2),
                "costs.two.a.instrs",
                "at most 2 (issue width 2 x 1 cycles)",
            ),
        ];
        for (sheet, width, field, allowed) in cases {
            let e = match width {
                None => sheet.validate(),
                Some(w) => sheet.validate_on(w),
            }
            .unwrap_err();
            assert_eq!((e.field, e.allowed.as_str()), (field, allowed), "{e}");
        }
        // The machine's width is checked only when it is known.
        let wide = Two {
            a: Task::new(1, 1000, 0, 0),
            ..ok
        };
        assert_eq!(wide.validate(), Ok(()));
        assert!(wide.validate_on(16).is_err());
        assert_eq!(
            Two {
                a: Task::new(1, 16, 8, 8),
                ..ok
            }
            .validate_on(16),
            Ok(())
        );
        // At the ends of the range.
        let most = MAX_COST as u32;
        let top = Two {
            a: Task::new(most, most, most / 2, most / 2),
            b: most,
        };
        assert_eq!(top.validate_on(1), Ok(()));
    }

    crate::cost_sheet! {
        /// A sheet with a count that pays for a store.
        struct Stores in "costs.stores" {
            /// A task.
            t: Task = Task::new(4, 6, 2, 1), Source::Choice("here");
            /// Store the record.
            put: u32 = 3, Source::Choice("because"), from 1: "its store of the record";
        }
    }

    #[test]
    fn a_partial_task_table_keeps_the_other_parts() {
        let d = Stores::default();
        let s: Stores = toml::from_str("[t]\nloads = 1\n").unwrap();
        assert_eq!(
            s,
            Stores {
                t: Task::new(4, 6, 1, 1),
                ..d
            }
        );
        let s: Stores = toml::from_str("t = { cycles = 9, stores = 0 }\nput = 5\n").unwrap();
        assert_eq!(
            s,
            Stores {
                t: Task::new(9, 6, 2, 0),
                put: 5
            }
        );
        let s: Stores = toml::from_str("[t]\n").unwrap();
        assert_eq!(s, d);
        // An unknown part, an unknown entry, a wrong type: errors naming them.
        let e = toml::from_str::<Stores>("[t]\nload = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `load`"), "{e}");
        let e = toml::from_str::<Stores>("tt = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `tt`"), "{e}");
        let e = toml::from_str::<Stores>("[t]\nloads = nan\n").unwrap_err();
        assert!(e.to_string().contains("expected u32"), "{e}");
        assert_eq!(e.span(), Some(12..15), "{e}"); // the value
                                                   // Out of range: the part named, in full.
        let s: Stores = toml::from_str("[t]\nloads = 4294967295\n").unwrap();
        assert_eq!(s.validate().unwrap_err().field, "costs.stores.t.loads");
        // What it serializes reads back the same.
        let text = toml::to_string(&s).unwrap();
        assert_eq!(toml::from_str::<Stores>(&text).unwrap(), s);
    }

    #[test]
    fn a_count_that_pays_for_a_store_starts_at_it() {
        let d = Stores::default();
        assert_eq!(d.validate(), Ok(()));
        let e = Stores { put: 0, ..d }.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "costs.stores.put must be from 1 to 1000000 (its store of the record), got 0"
        );
        let e = Stores {
            put: 1_000_001,
            ..d
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "costs.stores.put");
        assert_eq!(Stores { put: 1, ..d }.validate(), Ok(()));
        let r: Vec<&str> = d.entries().iter().map(|e| e.range).collect();
        assert_eq!(
            r,
            [
                "a task: each part 0 to 1000000",
                "1 to 1000000 (its store of the record)"
            ]
        );
        // The ranges in words say the one cap.
        for range in [u32::RANGE, u64::RANGE, crate::Cycles::RANGE, Task::RANGE] {
            assert!(range.ends_with(&MAX_COST.to_string()), "{range}");
        }
    }

    #[test]
    fn times_scales_every_part() {
        assert_eq!(Task::new(2, 3, 1, 1).times(3), Some(Task::new(6, 9, 3, 3)));
        assert_eq!(Task::new(1, 2, 0, 0).times(u32::MAX), None);
    }
}
