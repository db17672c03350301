//! Scenario files: one experiment described in TOML, the machine's
//! parameters beside it. `flashkit run FILE` runs one; `flashkit sweep`
//! varies its keys. A command's built-in defaults are a scenario's defaults,
//! so `examples/transfer.toml` (say) is what `flashkit transfer` runs.
//!
//! ```toml
//! [machine]            # any of these; the rest keep FLASH's values
//! data_buffers = 16
//! net_latency = 22
//!
//! [transfer]           # the experiment: exactly one table of a kind
//! bytes = 4096
//! sender = "dirty"
//! handler = "chunked"
//! chunk = 8
//! ```

use serde::{Deserialize, Serialize};

/// FLASH machine parameters a scenario may set (system cycles, counts).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub mem_first_dword: Option<u64>,
    pub mem_write_latency: Option<u64>,
    pub pc_state: Option<u64>,
    pub pc_first_word: Option<u64>,
    pub pc_line: Option<u64>,
    pub link_bytes_per_cycle: Option<u64>,
    pub header_bytes: Option<u64>,
    pub net_latency: Option<u64>,
    pub outbox_slots: Option<usize>,
    pub data_buffers: Option<usize>,
    pub swq_capacity: Option<usize>,
    pub inbox_dispatch: Option<u64>,
    pub outbox_latency: Option<u64>,
    pub pi_in: Option<u64>,
    pub pi_out: Option<u64>,
    pub dcache_lines: Option<usize>,
}

impl Machine {
    /// FLASH's parameters with this scenario's changes.
    pub fn params(&self) -> magic::MagicParams {
        use magic::Cycles;
        let mut p = magic::MagicParams::default();
        let c = |v: Option<u64>, d: &mut Cycles| {
            if let Some(v) = v {
                *d = Cycles(v);
            }
        };
        c(self.mem_first_dword, &mut p.mem_first_dword);
        c(self.mem_write_latency, &mut p.mem_write_latency);
        c(self.pc_state, &mut p.pc_state);
        c(self.pc_first_word, &mut p.pc_first_word);
        c(self.pc_line, &mut p.pc_line);
        c(self.net_latency, &mut p.net_latency);
        c(self.inbox_dispatch, &mut p.inbox_dispatch);
        c(self.outbox_latency, &mut p.outbox_latency);
        c(self.pi_in, &mut p.pi_in);
        c(self.pi_out, &mut p.pi_out);
        if let Some(v) = self.link_bytes_per_cycle {
            p.link_bytes_per_cycle = v;
        }
        if let Some(v) = self.header_bytes {
            p.header_bytes = v;
        }
        if let Some(v) = self.outbox_slots {
            p.outbox_slots = v;
        }
        if let Some(v) = self.data_buffers {
            p.data_buffers = v;
        }
        if let Some(v) = self.swq_capacity {
            p.swq_capacity = v;
        }
        if let Some(v) = self.dcache_lines {
            p.dcache_lines = v;
        }
        p
    }
}

fn d_bytes() -> u64 {
    4096
}
fn d_chunk() -> u32 {
    4
}
fn d_one() -> u32 {
    1
}
fn d_true() -> bool {
    true
}

/// A transfer experiment (`flashkit transfer`'s flags).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    #[serde(default = "d_bytes")]
    pub bytes: u64,
    #[serde(default)]
    pub sender: Sender,
    #[serde(default)]
    pub receiver: Receiver,
    #[serde(default)]
    pub handler: HandlerKind,
    #[serde(default = "d_chunk")]
    pub chunk: u32,
    #[serde(default)]
    pub src_offset: u64,
    #[serde(default)]
    pub dst_offset: u64,
    #[serde(default)]
    pub coherence: CoherenceKind,
    #[serde(default)]
    pub strategy: StrategyKind,
    #[serde(default)]
    pub direction: DirectionKind,
    #[serde(default = "d_one")]
    pub receives: u32,
    #[serde(default = "d_one")]
    pub sends: u32,
    #[serde(default = "d_true")]
    pub receive_first: bool,
}

impl Default for Transfer {
    fn default() -> Self {
        toml::from_str("").expect("every field has a default")
    }
}

macro_rules! kinds {
    ($name:ident { $($v:ident),+ } default $d:ident) => {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
        #[serde(rename_all = "kebab-case")]
        pub enum $name {
            #[default]
            $d,
            $($v),+
        }
    };
}

kinds!(Sender { Clean, Dirty, DirtyRemote } default Uncached);
kinds!(Receiver { Clean, Dirty } default Uncached);
kinds!(HandlerKind { Base, Optimized } default Chunked);
kinds!(CoherenceKind { Global } default Local);
kinds!(StrategyKind { Collect } default Pipelined);
kinds!(DirectionKind { Bi } default Uni);

impl Transfer {
    /// What the experiment cannot run: a chunk factor for a handler that
    /// does not chunk, and whatever the transfer itself refuses.
    pub fn validate(&self, params: magic::MagicParams) -> Result<(), String> {
        if self.handler != HandlerKind::Chunked && self.chunk != d_chunk() {
            return Err("--chunk applies only to --handler chunked".into());
        }
        self.config(params).validate()
    }

    pub fn config(&self, params: magic::MagicParams) -> protocols::transfer::Config {
        use protocols::transfer::{
            Config, Direction, ReceiverState, SenderState, Strategy, Version,
        };
        Config {
            bytes: self.bytes,
            sender: match self.sender {
                Sender::Uncached => SenderState::Uncached,
                Sender::Clean => SenderState::Clean,
                Sender::Dirty => SenderState::Dirty,
                Sender::DirtyRemote => SenderState::DirtyRemote,
            },
            receiver: match self.receiver {
                Receiver::Uncached => ReceiverState::Uncached,
                Receiver::Clean => ReceiverState::Clean,
                Receiver::Dirty => ReceiverState::Dirty,
            },
            handler: match self.handler {
                HandlerKind::Base => Version::Base,
                HandlerKind::Optimized => Version::Optimized,
                HandlerKind::Chunked => Version::Chunked(self.chunk),
            },
            src_offset: self.src_offset,
            dst_offset: self.dst_offset,
            mode: match self.coherence {
                CoherenceKind::Local => protocols::transfer::Mode::Local,
                CoherenceKind::Global => protocols::transfer::Mode::Global,
            },
            strategy: match self.strategy {
                StrategyKind::Pipelined => Strategy::Pipelined,
                StrategyKind::Collect => Strategy::Collect,
            },
            direction: match self.direction {
                DirectionKind::Uni => Direction::Uni,
                DirectionKind::Bi => Direction::Bi,
            },
            receives: self.receives,
            sends: self.sends,
            receive_first: self.receive_first,
            change: None,
            trace: false,
            params,
            costs: Default::default(),
            command_costs: Default::default(),
            coherence_costs: Default::default(),
        }
    }
}

kinds!(MissCase { LocalClean, RemoteDirty } default RemoteClean);
kinds!(CostProtocol { Finite, Indefinite } default Single);
kinds!(CostNetwork { Ordered } default Cm5);
kinds!(PlatformKind { Cm5Cmaml, Sp, Flash } default Cm5);
kinds!(PatternKind { Shift, Rand } default Ring);
kinds!(TechniqueKind { Holdoff, Tlb } default Invalidate);

/// A copy or send with a translation change in the middle (`flashkit remap`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Remap {
    #[serde(default)]
    pub technique: TechniqueKind,
}

/// The benchmark suite's tables for a platform (`flashkit suite`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    #[serde(default)]
    pub platform: PlatformKind,
    /// One benchmark, or all.
    pub benchmark: Option<String>,
    #[serde(default = "d_sixty_four")]
    pub nodes: u32,
}

fn d_sixteen() -> u32 {
    16
}
fn d_thousand() -> u32 {
    1000
}
fn d_c(v: u64) -> u64 {
    v
}

/// The engine benchmark's workload (`flashkit pipeline`), with its three
/// handlers' costs.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    #[serde(default = "d_sixteen")]
    pub nodes: u32,
    #[serde(default = "d_thousand")]
    pub msgs: u32,
    #[serde(default)]
    pub pattern: PatternKind,
    /// Cycles of the setup handler, the send handler (per packet), the
    /// receive handler (per packet) and the extra for a message's last one.
    #[serde(default = "setup_cost")]
    pub setup_cycles: u64,
    #[serde(default = "send_cost")]
    pub send_cycles: u64,
    #[serde(default = "recv_cost")]
    pub recv_cycles: u64,
    #[serde(default = "done_cost")]
    pub done_cycles: u64,
}

fn setup_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().setup.0)
}
fn send_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().send.0)
}
fn recv_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().recv.0)
}
fn done_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().done.0)
}

impl Pipeline {
    pub fn config(&self) -> protocols::pipeline::PipelineConfig {
        use magic::Cycles;
        use protocols::pipeline::{Pattern, PipelineConfig, PipelineCosts};
        PipelineConfig {
            nodes: self.nodes,
            msgs: self.msgs,
            pattern: match self.pattern {
                PatternKind::Ring => Pattern::Ring,
                PatternKind::Shift => Pattern::Shift,
                PatternKind::Rand => Pattern::Rand,
            },
            costs: PipelineCosts {
                setup: Cycles(self.setup_cycles),
                send: Cycles(self.send_cycles),
                recv: Cycles(self.recv_cycles),
                done: Cycles(self.done_cycles),
            },
        }
    }
}

fn d_three() -> u32 {
    3
}
fn d_offset() -> u64 {
    0x4080
}
fn d_two() -> u32 {
    2
}
fn d_four() -> u64 {
    4
}
fn d_sixty_four() -> u32 {
    64
}

/// One read miss (`flashkit miss`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Miss {
    #[serde(default)]
    pub case: MissCase,
    #[serde(default = "d_three")]
    pub nodes: u32,
    #[serde(default = "d_offset")]
    pub offset: u64,
    #[serde(default = "d_two")]
    pub owner: u32,
}

/// A remote fetch-and-add through a command sequence (`flashkit fetch-op`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FetchOp {
    #[serde(default = "d_one")]
    pub remote_node: u32,
}

/// A messaging protocol's instruction counts (`flashkit costs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MessagingCosts {
    #[serde(default)]
    pub protocol: CostProtocol,
    #[serde(default = "d_four")]
    pub words: u64,
    #[serde(default = "d_four")]
    pub packet_words: u64,
    #[serde(default)]
    pub network: CostNetwork,
}

/// A platform's LogP figures from the benchmark suite (`flashkit logp`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Logp {
    #[serde(default)]
    pub platform: PlatformKind,
    #[serde(default = "d_sixty_four")]
    pub nodes: u32,
}

/// The handlers' cost sheets (`[costs.transfer]`, `[costs.coherence]`,
/// `[costs.user]`, `[costs.command]`): any entry set here replaces the
/// sheet's default; docs/costs.md lists them.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CostTables {
    #[serde(default)]
    pub transfer: protocols::transfer::TransferCosts,
    #[serde(default)]
    pub coherence: coherence::protocol::CoherenceCosts,
    #[serde(default)]
    pub user: protocols::user::UserCosts,
    /// The command interface's, shared by the user layer and the transfer.
    #[serde(default)]
    pub command: protocols::command::CommandCosts,
}

/// A scenario: the machine, the handlers' costs and one experiment (the AM
/// platforms and the messaging-cost study keep their own machines;
/// `[machine]` sets FLASH's).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub costs: CostTables,
    pub transfer: Option<Transfer>,
    pub miss: Option<Miss>,
    pub fetch_op: Option<FetchOp>,
    pub messaging_costs: Option<MessagingCosts>,
    pub logp: Option<Logp>,
    pub pipeline: Option<Pipeline>,
    pub remap: Option<Remap>,
    pub suite: Option<Suite>,
}

impl Scenario {
    fn kinds(&self) -> usize {
        [
            self.transfer.is_some(),
            self.miss.is_some(),
            self.fetch_op.is_some(),
            self.messaging_costs.is_some(),
            self.logp.is_some(),
            self.pipeline.is_some(),
            self.remap.is_some(),
            self.suite.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count()
    }
}

/// A scenario's file and its text, for errors that name the line.
pub struct Source<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    /// The line (1-based) where `key` is set, if it is.
    fn line_of(&self, key: &str) -> Option<usize> {
        self.text
            .lines()
            .position(|l| {
                let t = l.trim_start();
                t.strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with('='))
            })
            .map(|i| i + 1)
    }

    /// An error about `key`: the file, its line and the key.
    pub fn error(&self, key: &str, why: &str) -> String {
        match self.line_of(key) {
            Some(l) => format!("{}:{l}: {key}: {why}", self.path),
            None => format!("{}: {key}: {why}", self.path),
        }
    }
}

/// Parse a scenario (the file's text after any sweep changes).
pub fn parse(src: &Source<'_>, value: toml::Table) -> Result<Scenario, String> {
    // Deserialize through the text so errors carry positions: the file's
    // own text when nothing was changed, else the changed table's.
    let changed = src.text.parse::<toml::Table>().ok().as_ref() != Some(&value);
    let text = if changed {
        toml::to_string(&value).map_err(|e| format!("{}: {e}", src.path))?
    } else {
        src.text.to_string()
    };
    let s: Scenario = toml::from_str(&text).map_err(|e| {
        let msg = e.message().replace('\n', "; ");
        // An unknown key: name it and its line.
        if let Some(k) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            return src.error(k, &msg);
        }
        // Else the line the error points at, and the key set on it.
        match e.span().filter(|_| !changed) {
            Some(sp) => {
                let line = text[..sp.start].lines().count().max(1);
                let l = text.lines().nth(line - 1).unwrap_or("");
                match l.split_once('=') {
                    Some((k, _)) => format!("{}:{line}: {}: {msg}", src.path, k.trim()),
                    None => format!("{}:{line}: {msg}", src.path),
                }
            }
            None => {
                // A changed table: name the key the message names, if any.
                let key = msg
                    .split('`')
                    .nth(1)
                    .filter(|k| !k.contains(' ') && msg.starts_with("unknown field"));
                match key {
                    Some(k) => src.error(k, &msg),
                    None => format!("{}: {msg}", src.path),
                }
            }
        }
    })?;
    if s.kinds() != 1 {
        return Err(format!(
            "{}: a scenario holds exactly one experiment table: [transfer], [miss], [fetch_op], [remap], [pipeline], [messaging_costs], [logp] or [suite] (found {})",
            src.path,
            s.kinds()
        ));
    }
    // Impossible values, named by their key.
    let p = s.machine.params();
    p.validate().map_err(|e| {
        let key = e.split_whitespace().next().unwrap_or("machine");
        src.error(key, &e)
    })?;
    if let Some(t) = &s.transfer {
        t.validate(p.clone()).map_err(|e| {
            let key = e
                .split_whitespace()
                .next()
                .unwrap_or("transfer")
                .trim_start_matches("--")
                .replace('-', "_");
            src.error(&key, &e)
        })?;
    }
    Ok(s)
}

/// Read a scenario file's text into a table (syntax errors name the line).
pub fn table(src: &Source<'_>) -> Result<toml::Table, String> {
    src.text.parse::<toml::Table>().map_err(|e| {
        let line = e.span().map(|s| src.text[..s.start].lines().count().max(1));
        match line {
            Some(l) => format!("{}:{l}: {}", src.path, e.message().replace('\n', "; ")),
            None => format!("{}: {}", src.path, e.message().replace('\n', "; ")),
        }
    })
}

/// What one run measured: JSON for scripts and sweeps, text for people.
pub struct Report {
    pub json: serde_json::Value,
    pub table: String,
    /// The run succeeded but its check failed (wrong data).
    pub failed: Option<String>,
}

/// Run a scenario; with `trace`, the measured run's timelines come back
/// as Chrome trace-event JSON too.
pub fn run(s: &Scenario) -> Result<Report, protocols::transfer::Failed> {
    run_traced(s, false).map(|x| x.0)
}

pub fn run_traced(
    s: &Scenario,
    trace: bool,
) -> Result<(Report, Option<serde_json::Value>), protocols::transfer::Failed> {
    use protocols::transfer::Failed;
    let mut p = s.machine.params();
    // Machines built for the run record their timelines from the start.
    p.trace = trace;
    let input = |e: String| Failed::Input(e);
    let chrome = |nodes: u32, t: Vec<magic::trace::Slice>| {
        trace.then(|| magic::trace::chrome_json(nodes, &t))
    };
    if let Some(m) = &s.miss {
        let coh = coherence::CohParams {
            costs: s.costs.coherence,
            ..Default::default()
        };
        let (r, m) = miss(m, p, coh).map_err(input)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(f) = &s.fetch_op {
        let (r, m) = fetch_op(f, p, user_params(&s.costs)).map_err(input)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.pipeline {
        let (r, m) = pipeline(x, trace).map_err(input)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.remap {
        let (r, m) = remap(x, p, user_params(&s.costs)).map_err(input)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.suite {
        if trace {
            return Err(input(
                "--trace records MAGIC's timelines: the suite runs the AM platforms' own machines"
                    .into(),
            ));
        }
        return suite(x).map(|r| (r, None)).map_err(input);
    }
    if let Some(c) = &s.messaging_costs {
        if trace {
            return Err(input(
                "--trace records MAGIC's timelines: the cost study runs on the CM-5 model".into(),
            ));
        }
        return messaging_costs(c).map(|r| (r, None)).map_err(input);
    }
    if let Some(l) = &s.logp {
        if trace {
            return Err(input(
                "--trace records MAGIC's timelines: logp runs the AM suite's own machines".into(),
            ));
        }
        return logp(l).map(|r| (r, None)).map_err(input);
    }
    let t = s.transfer.as_ref().expect("checked at parse");
    let mut c = t.config(p);
    c.trace = trace;
    c.costs = s.costs.transfer;
    c.command_costs = s.costs.command;
    c.coherence_costs = s.costs.coherence;
    let r = protocols::transfer::run(&c)?;
    let tr = chrome(r.machine.nodes(), r.machine.trace());
    let failed = (!r.data_ok || r.incoherent.is_some())
        .then(|| "the transfer left wrong data or incoherent caches".to_string());
    Ok((
        Report {
            json: r.json(),
            table: r.to_string(),
            failed,
        },
        tr,
    ))
}

fn ok(json: serde_json::Value, table: String) -> Result<Report, String> {
    Ok(Report {
        json,
        table,
        failed: None,
    })
}

pub fn miss(
    m: &Miss,
    p: magic::MagicParams,
    coh: coherence::CohParams,
) -> Result<(Report, magic::Magic<coherence::CohNode>), String> {
    use coherence::miss::{self, Case, Setup};
    let case = match m.case {
        MissCase::LocalClean => Case::LocalClean,
        MissCase::RemoteClean => Case::RemoteClean,
        MissCase::RemoteDirty => Case::RemoteDirty,
    };
    let setup = Setup {
        nodes: m.nodes,
        offset: m.offset,
        owner: m.owner,
    };
    let r = miss::run_with(case, setup, p, coh)?;
    let ledger = r.machine.ledger();
    with(
        r.machine,
        ok(
            serde_json::json!({
                "case": case.name(),
                "latency_cycles": r.latency.0,
                "occupancy": ledger.handlers,
            }),
            format!(
                "{}: {} cycles ({:.2} us)\n\n{}",
                case.name(),
                r.latency,
                r.latency.as_us(),
                ledger.render()
            ),
        ),
    )
}

fn with<M>(m: M, r: Result<Report, String>) -> Result<(Report, M), String> {
    r.map(|r| (r, m))
}

/// The user layer's parameters with a scenario's cost sheets.
fn user_params(costs: &CostTables) -> protocols::user::UserParams {
    protocols::user::UserParams {
        costs: costs.user,
        command: costs.command,
        ..Default::default()
    }
}

pub fn fetch_op(
    f: &FetchOp,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), String> {
    let target = f.remote_node;
    if target > 255 {
        return Err(format!("--remote-node must be at most 255 (got {target})"));
    }
    let r = protocols::user::experiments::fetch_op_with(target, p, user)?;
    let ledger = r.machine.ledger();
    let (old, new, startup, latency) = (r.old, r.new, r.startup, r.latency);
    with(r.machine, ok(
        serde_json::json!({
            "latency_cycles": latency.0,
            "startup_cycles": startup.0,
            "occupancy": ledger.handlers,
        }),
        format!(
            "fetch-and-add at node {target}: old value {old}, new {new}\nstart-up  {startup} cycles\nlatency   {latency} cycles\n\n{}",
            ledger.render()
        ),
    ))
}

pub fn messaging_costs(c: &MessagingCosts) -> Result<Report, String> {
    use protocols::am::costs::{self, Delivery as Protocol, Network};
    if c.words > 1 << 20 {
        return Err(format!(
            "--words must be at most {} (got {})",
            1 << 20,
            c.words
        ));
    }
    let r = costs::run(
        match c.protocol {
            CostProtocol::Single => Protocol::Single,
            CostProtocol::Finite => Protocol::Finite,
            CostProtocol::Indefinite => Protocol::Indefinite,
        },
        c.words,
        c.packet_words,
        match c.network {
            CostNetwork::Cm5 => Network::Cm5,
            CostNetwork::Ordered => Network::Ordered,
        },
    )?;
    ok(
        serde_json::to_value(&r).map_err(|e| e.to_string())?,
        r.to_string(),
    )
}

/// The platform a `logp` or `suite` names.
pub fn platform(k: PlatformKind, nodes: u32) -> Result<Box<dyn protocols::am::Platform>, String> {
    use protocols::am::cm5::{Cm5, Layer};
    if !(3..=1024).contains(&nodes) {
        return Err(format!("--nodes must be from 3 to 1024 (got {nodes})"));
    }
    Ok(match k {
        PlatformKind::Cm5 => Box::new(Cm5::new(nodes, Layer::Cmam)),
        PlatformKind::Cm5Cmaml => Box::new(Cm5::new(nodes, Layer::Cmaml)),
        PlatformKind::Sp => Box::new(protocols::am::sp::Sp::new(nodes)),
        PlatformKind::Flash => Box::new(protocols::am::flash::Flash::new(nodes)),
    })
}

pub fn logp_figures(l: &Logp) -> Result<protocols::am::suite::LogP, String> {
    let plat = platform(l.platform, l.nodes)?;
    Ok(protocols::am::suite::logp(plat.as_ref())?)
}

pub fn logp(l: &Logp) -> Result<Report, String> {
    use std::fmt::Write as _;
    let f = logp_figures(l)?;
    let mut t = format!("platform {} ({} nodes)\n", f.platform, l.nodes);
    for (k, v) in [
        ("send overhead (one-to-two)", f.send_overhead_us),
        ("reply overhead (one-to-two)", f.reply_overhead_us),
        ("receive overhead (two-to-one)", f.recv_overhead_us),
        ("empty poll", f.poll_empty_us),
        ("poll taking one message", f.poll_one_us),
        ("round trip, node 0 to 1", f.round_trip_us),
        ("ring, per message", f.ring_us),
        ("bulk start-up", f.bulk.startup_us),
    ] {
        let _ = writeln!(t, "  {k:<32} {v:>8.2} us");
    }
    let _ = writeln!(
        t,
        "  {:<32} {:>8.1} MB/s",
        "bulk bandwidth", f.bulk.bandwidth_mb_s
    );
    let _ = writeln!(
        t,
        "  {:<32} {:>8.0} bytes",
        "bulk n1/2", f.bulk.n_half_bytes
    );
    ok(serde_json::to_value(&f).map_err(|e| e.to_string())?, t)
}

/// The pipeline workload: the peers' simulated results and the ledger (the
/// command adds the event loop's wall time, which is not the model's).
pub fn pipeline(
    x: &Pipeline,
    trace: bool,
) -> Result<(Report, magic::Magic<protocols::pipeline::PipeNode>), String> {
    let cfg = x.config();
    let mut m = protocols::pipeline::build(&cfg)?;
    if trace {
        m.trace_on();
    }
    let report = m.run();
    let (r, ledger) = (protocols::pipeline::result(&m), m.ledger());
    let failed = (!report.is_clean()).then(|| {
        format!(
            "the model stopped with work pending: {}",
            report.stuck.join("; ")
        )
    });
    let report = Report {
        json: serde_json::json!({
            "completion": r.completion,
            "sum_completion": r.sum_completion,
            "sum_latency": r.sum_latency,
            "events": r.events,
        }),
        table: format!(
            "pipeline: {} nodes x {} messages, {:?}\ncompletion      {} cycles\nsum_completion  {}\nsum_latency     {}\nevents          {}\n\n{}",
            cfg.nodes,
            cfg.msgs,
            cfg.pattern,
            r.completion,
            r.sum_completion,
            r.sum_latency,
            r.events,
            ledger.summed().render()
        ),
        failed,
    };
    Ok((report, m))
}

pub fn remap(
    x: &Remap,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), String> {
    use protocols::user::experiments::{self, Technique};
    let t = match x.technique {
        TechniqueKind::Holdoff => Technique::Holdoff,
        TechniqueKind::Invalidate => Technique::Invalidate,
        TechniqueKind::Tlb => Technique::Tlb,
    };
    let (r, m) = experiments::remap_with(t, p, user)?;
    let report = Report {
        json: serde_json::to_value(&r).map_err(|e| e.to_string())?,
        table: format!("{r}\n{}", m.ledger().render()),
        failed: (!r.data_ok).then(|| "the destination does not hold the source's bytes".into()),
    };
    Ok((report, m))
}

pub fn suite(x: &Suite) -> Result<Report, String> {
    use protocols::am::cm5::{Cm5, Layer, Reception};
    use protocols::am::suite;
    let plat = platform(x.platform, x.nodes)?;
    let cmaml = x.platform == PlatformKind::Cm5Cmaml;
    let names: Vec<String> = match &x.benchmark {
        Some(b) => vec![b.clone()],
        None => suite::BENCHMARKS
            .iter()
            .map(|s| s.to_string())
            .chain(cmaml.then(|| "interrupt".to_string()))
            .collect(),
    };
    let mut tables = Vec::new();
    for n in names {
        let t = if n == "interrupt" {
            if !cmaml {
                return Err(
                    "interrupt-driven reception is CMAML's: use --platform cm5-cmaml".into(),
                );
            }
            let mut stock = Cm5::new(x.nodes, Layer::Cmaml);
            stock.reception = Reception::Interrupts { fast: false };
            let mut fast = stock.clone();
            fast.reception = Reception::Interrupts { fast: true };
            vec![suite::interrupt_table(&stock, &fast)?]
        } else {
            suite::table(plat.as_ref(), &n)?
        };
        tables.extend(t);
    }
    Ok(Report {
        json: serde_json::to_value(&tables).map_err(|e| e.to_string())?,
        table: tables.iter().map(|t| format!("{t}\n")).collect(),
        failed: None,
    })
}
