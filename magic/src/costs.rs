//! The vocabulary of handler costs: what a protocol's cost sheet is made of.
//!
//! Every constant a handler charges lives in its protocol's *cost sheet*, a
//! struct declared with [`cost_sheet!`](crate::cost_sheet): one field per
//! constant, each with its default and its provenance ([`Source`]). The sheet
//! is the one place a handler takes its counts from (no number is passed to
//! [`Cx::instr`](crate::Cx::instr) or [`Cx::bundles`](crate::Cx::bundles) in
//! protocol code), it deserializes from a scenario's `[costs.NAME]` table
//! (unknown keys refused, missing keys kept at their defaults), and it lists
//! itself ([`Sheet::entries`]) so the documentation renders from the code.
//!
//! ```
//! use magic::costs::{Sheet, Source, Task};
//!
//! magic::cost_sheet! {
//!     /// A toy protocol's costs.
//!     pub struct ToyCosts {
//!         /// Decode the header and load the record.
//!         decode: Task = Task::new(3, 5, 1, 0),
//!             Source::Choice("two bundles of decode, one load-use stall");
//!         /// Instructions per word copied.
//!         per_word: u32 = 2, Source::Published("the toy paper, Table 1");
//!     }
//! }
//!
//! let c: ToyCosts = toml::from_str("per_word = 3").unwrap();
//! assert_eq!(c.per_word, 3);
//! assert_eq!(c.decode, Task::new(3, 5, 1, 0)); // kept at its default
//! assert!(toml::from_str::<ToyCosts>("per_wrd = 3").is_err());
//! assert_eq!(c.entries()[1].key, "per_word");
//! ```

use crate::cx::Cx;
use serde::{Deserialize, Serialize};

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

    /// The same task repeated `n` times (a per-item cost times the items).
    pub const fn times(self, n: u32) -> Task {
        Task {
            cycles: self.cycles * n,
            instrs: self.instrs * n,
            loads: self.loads * n,
            stores: self.stores * n,
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
    pub tasks: smallvec::SmallVec<[(&'static str, u32); 12]>,
    /// Instructions in all.
    pub instructions: u32,
    /// Loads of MAGIC memory.
    pub loads: u32,
    /// Stores of MAGIC memory.
    pub stores: u32,
}

impl Breakdown {
    /// Count task `t` under `row`: its instructions join the row's (a row
    /// not seen before is appended), and its instructions, loads and stores
    /// join the totals. Charging the task is the caller's (see
    /// [`Task::charge`]); this only keeps the account.
    pub fn add(&mut self, row: &'static str, t: &Task) {
        match self.tasks.iter_mut().find(|x| x.0 == row) {
            Some(x) => x.1 += t.instrs,
            None => self.tasks.push((row, t.instrs)),
        }
        self.instructions += t.instrs;
        self.loads += t.loads;
        self.stores += t.stores;
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
    /// Why it has its default value.
    pub source: Source,
}

/// A protocol's cost sheet (declared with [`cost_sheet!`](crate::cost_sheet)).
pub trait Sheet {
    /// Every entry, in declaration order.
    fn entries(&self) -> Vec<Entry>;
}

/// A sheet as a Markdown table (key, value, provenance, what it pays for).
pub fn markdown(sheet: &dyn Sheet) -> String {
    let mut s = String::from("| key | default | source | what it pays for; why this value |\n");
    s.push_str("|---|---|---|---|\n");
    for e in sheet.entries() {
        let cell = |x: &str| x.replace('|', "\\|").replace('\n', " ");
        s.push_str(&format!(
            "| `{}` | {} | {} | {} {} |\n",
            e.key,
            e.value,
            e.source.kind(),
            cell(e.doc.trim()),
            cell(e.source.why())
        ));
    }
    s
}

/// Declare a cost sheet: a struct of costs, each with its doc comment, its
/// default and its [`Source`](crate::costs::Source). The struct derives
/// `Default` (the defaults given), `Serialize` and `Deserialize` (a partial
/// table keeps the other defaults; an unknown key is an error naming it) and
/// implements [`Sheet`](crate::costs::Sheet). The calling crate needs
/// `serde` with its derive feature. See the [module docs](crate::costs).
#[macro_export]
macro_rules! cost_sheet {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $field:ident : $ty:ty = $default:expr, $source:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
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

        impl $crate::costs::Sheet for $name {
            fn entries(&self) -> Vec<$crate::costs::Entry> {
                vec![$(
                    $crate::costs::Entry {
                        key: stringify!($field),
                        doc: concat!($($doc),+),
                        value: $crate::costs::Value::from(self.$field),
                        source: $source,
                    },
                )*]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::cost_sheet! {
        /// A sheet for the tests.
        struct Two {
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
        assert!(md.contains("| `a` | 2 cycles, 3 instr, 1 ld / 0 st | published | A task. here |"));
        assert!(md.contains("| `b` | 7 | model choice | A count over two lines. because |"));
    }

    #[test]
    fn times_scales_every_part() {
        assert_eq!(Task::new(2, 3, 1, 1).times(3), Task::new(6, 9, 3, 3));
    }
}
