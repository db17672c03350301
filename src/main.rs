//! The `flashkit` command-line program.

/// The allocator: the checker keeps and frees a snapshot of the machine for
/// every state it finds, and this one does that about twice as fast as the
/// system's.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[macro_use]
mod output;
mod check;
mod sweep;

use flashkit::{plot, scenario};

use output::Failure;

use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand, ValueEnum};
use protocols::pipeline::{self, Pattern, PipelineConfig};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "flashkit",
    version,
    about = "A model of the FLASH multiprocessor's MAGIC node controller"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Draw a plot (SVG or PNG, by the output's extension): computed from
    /// the model, or from a sweep's CSV or JSON Lines.
    ///
    /// Example: flashkit plot chunk --out chunk.svg
    Plot {
        /// per-line: time per line against lines sent; bandwidth: by handler
        /// and cache state; chunk: sender time against chunk factor; logp:
        /// the platforms side by side; csv: from --csv FILE; jsonl: from
        /// --jsonl FILE.
        #[arg(value_enum)]
        kind: PlotKind,
        /// The image to write (.svg or .png).
        #[arg(long, value_parser = parse_path)]
        out: String,
        /// For `csv`: the sweep's CSV (its columns named by --x and --y).
        #[arg(long)]
        csv: Option<String>,
        /// For `jsonl`: the sweep's JSON Lines (`--format jsonl`); its
        /// columns are named as the CSV's are.
        #[arg(long)]
        jsonl: Option<String>,
        /// For `csv` and `jsonl`: the column along the x axis
        /// (`transfer.chunk`, `machine.net_latency`).
        #[arg(long)]
        x: Option<String>,
        /// For `csv` and `jsonl`: the column along the y axis
        /// (`result.per_line_cycles`).
        #[arg(long)]
        y: Option<String>,
        /// For `csv` and `jsonl`: one line per value of this column.
        #[arg(long)]
        series: Option<String>,
    },
    /// Run a scenario file (TOML): the machine's parameters and one
    /// experiment. The files in examples/ are the commands' defaults. A
    /// saved result (the JSON --format json prints, with its `config`) runs
    /// its configuration again.
    ///
    /// Example: flashkit run examples/transfer.toml --format json
    Run {
        /// The scenario file, or a saved result (JSON).
        #[arg(required_unless_present = "print_defaults")]
        file: Option<String>,
        /// Print the complete scenario of an experiment with every default
        /// (the machine, every cost sheet, the experiment's table) and stop.
        /// Example: flashkit run --print-defaults miss > miss.toml
        #[arg(
            long,
            value_name = "EXPERIMENT",
            num_args = 0..=1,
            default_missing_value = "transfer",
            conflicts_with_all = ["file", "trace", "format"]
        )]
        print_defaults: Option<scenario::Experiment>,
        /// Write the measured run's timelines here (Chrome trace-event JSON,
        /// for Perfetto or chrome://tracing).
        #[arg(long, value_parser = parse_path)]
        trace: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Run a scenario over the cross product of values of some of its keys,
    /// in parallel, one CSV (or JSON) row per point. With --shard or --out it
    /// writes a part, which `flashkit merge` turns into the table.
    ///
    /// Example: flashkit sweep examples/transfer.toml --vary transfer.chunk=1,2,4,8 --vary transfer.sender=uncached,dirty
    Sweep {
        /// The scenario file.
        file: String,
        /// A key (table.key) and its values, comma separated; repeatable.
        #[arg(long = "vary", required = true)]
        vary: Vec<String>,
        /// Run only every n-th point starting at i ("i/n"): shards of one
        /// sweep, for several machines. The output is a part.
        #[arg(long, allow_hyphen_values = true)]
        shard: Option<String>,
        /// Write the part to FILE, each row as soon as the points before it
        /// are done (a killed run keeps them).
        #[arg(long, value_name = "FILE", value_parser = parse_path)]
        out: Option<String>,
        /// Keep the rows the --out file holds and run only the points it
        /// lacks (a torn last line is dropped).
        #[arg(long)]
        resume: bool,
        /// Worker threads (default: the CPUs this process may use, by its
        /// CPU affinity and cgroup quota, and at most SLURM_CPUS_PER_TASK
        /// where that is set).
        #[arg(long)]
        threads: Option<usize>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        #[arg(long, value_enum, default_value_t = SweepFormat::Csv)]
        format: SweepFormat,
    },
    /// A study that runs many transfers and puts them side by side.
    /// `coherence`: every coherence mode (none, none with the user's
    /// flushes, local, global) against every starting state of the send
    /// and receive buffers and both placements of their homes; one row per
    /// run, each refused combination listed with its reason.
    ///
    /// Example: flashkit study coherence --bytes 8192 --format csv
    Study {
        #[arg(value_enum)]
        study: StudyKind,
        /// Bytes each transfer sends.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_offset, default_value = "4096")]
        bytes: u64,
        /// Also draw the total time, by mode and sender state, as bars
        /// (.svg or .png).
        #[arg(long, value_name = "FILE")]
        plot: Option<String>,
        /// Worker threads (default: the CPUs this process may use).
        #[arg(long)]
        threads: Option<usize>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Merge a sharded sweep's parts (sweep --shard ... --out) into the table
    /// the unsharded sweep writes. Parts of another sweep, a missing or
    /// duplicated point: one line saying so, exit status 2, nothing written.
    ///
    /// Example: flashkit merge parts/part-*.csv -o sweep.csv
    Merge {
        /// The parts, in any order.
        #[arg(required = true)]
        parts: Vec<String>,
        /// The table to write (default: standard output).
        #[arg(short, long, value_name = "FILE", value_parser = parse_path)]
        out: Option<String>,
    },
    /// Instruction counts of a messaging protocol on the CM-5 model, by
    /// feature (base, buffer management, in-order delivery, fault
    /// tolerance) at source and destination.
    ///
    /// Example: flashkit costs --protocol indefinite --words 1024 --packet-words 16 --format json
    Costs {
        #[arg(long, value_enum)]
        protocol: scenario::CostProtocol,
        /// Words in the message.
        #[arg(long, default_value_t = 4)]
        words: u64,
        /// Data words per packet.
        #[arg(long, default_value_t = 4)]
        packet_words: u64,
        /// cm5: unordered, unreliable; ordered: ordered, reliable, deadlock-free.
        #[arg(long, value_enum, default_value_t = scenario::CostNetwork::Cm5)]
        network: scenario::CostNetwork,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// LogP parameters of a platform's Active Message layer, measured by the
    /// benchmark suite; or, with --export, written as another simulator's
    /// input.
    ///
    /// Example: flashkit logp --platform cm5 --format json
    ///
    /// Example: flashkit logp --platform cm5 --nodes 16 --export simgrid --out cm5-sg
    Logp {
        #[arg(long, value_enum)]
        platform: scenario::PlatformKind,
        /// Write the figures as another simulator's input files into --out.
        #[arg(long, value_enum)]
        export: Option<ExportArg>,
        /// The folder --export writes (created if missing).
        #[arg(long, value_parser = parse_path)]
        out: Option<String>,
        /// Nodes in the machine (FLASH up to 4096, the CM-5 1024, the SP 512).
        #[arg(long, default_value_t = 64)]
        nodes: u32,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The benchmark suite's tables for a platform (all, or one benchmark).
    ///
    /// Example: flashkit suite --platform cm5 --benchmark round-trip
    Suite {
        #[arg(long, value_enum)]
        platform: scenario::PlatformKind,
        /// One benchmark (default: every one); `interrupt` is CMAML's
        /// (--platform cm5-cmaml).
        #[arg(long, value_parser = PossibleValuesParser::new(benchmarks()))]
        benchmark: Option<String>,
        /// Nodes in the machine (FLASH up to 4096, the CM-5 1024, the SP 512).
        /// Traverse sends from every node at each of its steps: on
        /// thousands of nodes the whole suite takes minutes.
        #[arg(long, default_value_t = 64)]
        nodes: u32,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// A bulk transfer over a connection between two processes on two
    /// nodes: start-up breakdown, per-line rate and what bounds it, and the
    /// handlers' occupancy.
    ///
    /// Example: flashkit transfer --bytes 4096 --sender dirty --handler chunked --chunk 8
    Transfer {
        /// Bytes to send (each direction), 1 to 1048576.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_offset, default_value = "4096")]
        bytes: u64,
        /// The send buffer's lines at the start: uncached, clean or dirty in
        /// the sender's cache, or dirty in a third node's cache.
        #[arg(long, value_enum, default_value_t = scenario::Sender::Uncached)]
        sender: scenario::Sender,
        /// The receive buffer's lines at the start.
        #[arg(long, value_enum, default_value_t = scenario::Receiver::Uncached)]
        receiver: scenario::Receiver,
        /// The sender's transfer handler.
        #[arg(long, value_enum, default_value_t = scenario::HandlerKind::Chunked)]
        handler: scenario::HandlerKind,
        /// Components per invocation of the chunked handler.
        #[arg(long, default_value_t = 4)]
        chunk: u32,
        /// Offset of the send buffer within its page.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_offset, default_value = "0")]
        src_offset: u64,
        /// Offset of the receive buffer within its page.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_offset, default_value = "0")]
        dst_offset: u64,
        /// Message-data coherence.
        #[arg(long, value_enum, default_value_t = scenario::CoherenceKind::Local)]
        coherence: scenario::CoherenceKind,
        /// The user programs flush message data through their caches: the
        /// sender writes back its send buffer before the send, the receiver
        /// its receive buffer before posting, and invalidates it once the
        /// data is in (what --coherence none needs for correct data).
        #[arg(long)]
        flush: bool,
        /// Under global coherence: fetch remote dirty lines overlapped with
        /// the transfer, or all of them first (collect needs --coherence
        /// global).
        #[arg(long, value_enum, default_value_t = scenario::StrategyKind::Pipelined)]
        strategy: scenario::StrategyKind,
        /// Where the buffers are homed: at the transferring nodes, or both
        /// at a third node (node 2; needs --coherence none or global).
        #[arg(long, value_enum, default_value_t = scenario::Placement::Home)]
        placement: scenario::Placement,
        /// One sender, or both partners sending to each other at once.
        #[arg(long, value_enum, default_value_t = scenario::DirectionKind::Uni)]
        direction: scenario::DirectionKind,
        /// Receives the data is split over (a byte stream: one send may fill
        /// several receives); 1 to 4096.
        #[arg(long, default_value_t = 1)]
        receives: u32,
        /// Sends the data is split over (back to back in the send buffer); 1
        /// to 4096.
        #[arg(long, default_value_t = 1)]
        sends: u32,
        /// Post the receives after the send instead of before it.
        #[arg(long)]
        receive_late: bool,
        /// Write the measured run's timelines here (Chrome trace-event JSON,
        /// for Perfetto or chrome://tracing).
        #[arg(long, value_parser = parse_path)]
        trace: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Run the engine benchmark workload: every node sends MSGS messages of 32
    /// packets through three fixed-cost handlers on MAGIC.
    ///
    /// Example: flashkit pipeline --nodes 64 --msgs 1000 --pattern rand --format json
    Pipeline {
        /// Nodes in the machine (2 to 4096).
        #[arg(long, default_value_t = 16)]
        nodes: u32,
        /// Messages each node sends.
        #[arg(long, default_value_t = 1000)]
        msgs: u32,
        /// How each node picks its destinations.
        #[arg(long, value_enum, default_value_t = PatternArg::Ring)]
        pattern: PatternArg,
        /// Add the event loop's wall-clock time (`wall_s` in JSON and CSV;
        /// events a second and seconds in the table): a measure of the
        /// simulator, not of the model, so it differs from run to run.
        /// Without it every run prints the same bytes.
        #[arg(long)]
        timing: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// One read miss from the processor's point of view, through the directory
    /// protocol on MAGIC: its latency and where the cycles went.
    ///
    /// Example: flashkit miss --case remote-dirty --format json
    Miss {
        /// local-clean: homed here, uncached; remote-clean: homed at node 1,
        /// uncached; remote-dirty: homed at node 1, dirty in a third node's cache.
        #[arg(long, value_enum)]
        case: scenario::MissCase,
        /// Nodes in the machine, 3 to 4096.
        #[arg(long, default_value_t = 3)]
        nodes: u32,
        /// Byte offset of the line in its home's memory (an offset within
        /// a line names that line: it is aligned down to its 128 bytes).
        #[arg(long, allow_hyphen_values = true, value_parser = parse_offset, default_value = "0x4080")]
        offset: u64,
        /// The node holding the dirty copy (remote-dirty; the other cases
        /// have none, and take only the default).
        #[arg(long, default_value_t = 2)]
        owner: u32,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// A remote fetch-and-add through a command sequence: start-up, latency
    /// and where the cycles went.
    ///
    /// Example: flashkit fetch-op --remote-node 1 --format json
    FetchOp {
        /// The node whose memory holds the word (0: the requester's own).
        #[arg(long, default_value_t = 1)]
        remote_node: u32,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Search every order of a small machine's deliveries, running the real
    /// handlers: its states, whether the bounded space was exhausted, and
    /// any violation of the protocol's invariants with a shortest trace.
    /// Exit status 1 if a violation was found.
    ///
    /// Example: flashkit check coherence --nodes 2 --format json
    Check {
        #[arg(value_enum)]
        kind: check::CheckKind,
        #[command(flatten)]
        args: check::CheckArgs,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// A four-page copy or send with a translation change of one of its source
    /// pages in the middle, under one of the three techniques that keep
    /// MAGIC's physical addresses valid.
    ///
    /// Example: flashkit remap --technique invalidate --format json
    Remap {
        #[arg(long, value_enum)]
        technique: scenario::TechniqueKind,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

/// The benchmarks `suite --benchmark` takes: the suite's own list, and
/// CMAML's interrupt-driven reception.
fn benchmarks() -> Vec<&'static str> {
    let mut v = protocols::am::suite::BENCHMARKS.to_vec();
    v.push("interrupt");
    v
}

/// A file or folder to write: an empty path names none (bad input, not a
/// failed write).
fn parse_path(s: &str) -> Result<String, String> {
    match s {
        "" => Err("an empty path names no file".into()),
        s => Ok(s.to_string()),
    }
}

/// A byte count or offset, decimal or 0x-hexadecimal.
fn parse_offset(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a byte count or offset (decimal or 0x-hex)");
    // Digits only: the parsers below would take a sign (`+4096`, `0x+10`).
    if s.contains(['+', '-']) {
        return Err(bad());
    }
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| bad())
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlotKind {
    PerLine,
    Bandwidth,
    Chunk,
    Logp,
    Csv,
    Jsonl,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SweepFormat {
    /// A header, then a line a point: the point's number, its parameters
    /// (docs/sweeps.md says which) and its result.
    Csv,
    /// The CSV's columns as one JSON object a point (a JSON array).
    Json,
    /// JSON Lines: one object a point, its complete scenario under
    /// `config` and its result under `result`.
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
enum StudyKind {
    /// Coherence modes against buffer states and placements.
    Coherence,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportArg {
    /// LogGOPSim: `flags` (integers in the unit of `unit_seconds`) and GOAL
    /// schedules (`pingpong.goal`, `ring.goal`, `bulk.goal`).
    Loggopsim,
    /// SimGrid: `platform.xml`, the S4U ping-pong `pingpong.py`, and
    /// `smpi.cfg` (SMPI's overheads).
    Simgrid,
}

#[derive(Clone, Copy, ValueEnum)]
enum PatternArg {
    Ring,
    Shift,
    Rand,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Table,
    Json,
    /// A header and one row: every scalar of the JSON by dotted key (an
    /// undefined figure an empty cell, a list of values one cell); a
    /// study's rows, and a suite's tables one block each.
    Csv,
}

/// The command line's grammar, a negative number taken as a value (and
/// refused by the flag it was given to), not as a string of short flags.
fn grammar() -> clap::Command {
    fn negative(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true).mut_subcommands(negative)
    }
    negative(<Cli as clap::CommandFactory>::command())
}

fn main() -> ExitCode {
    let parsed = grammar()
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                // Help and version go to standard output: closed, they are lost.
                let open = if e.use_stderr() {
                    Ok(())
                } else {
                    output::stdout_open()
                };
                let printed = open
                    .and_then(|()| e.print().map_err(|x| output::failed("standard output", &x)));
                return match (printed, e.kind()) {
                    (Err(f), _) => exit(f),
                    (Ok(()), DisplayHelpOnMissingArgumentOrSubcommand) => ExitCode::from(2),
                    (Ok(()), _) => ExitCode::SUCCESS,
                };
            }
            output::say(&clap_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    // Bad input or a failed run first; then whether standard output took
    // everything printed (a failed run's report, a check's violation and
    // trace, lost on the way out is said too; its status stays the run's).
    match run(cli) {
        Ok(()) => output::finish().map_or_else(exit, |()| ExitCode::SUCCESS),
        Err(f) => {
            let code = exit(f);
            if let Err(Failure::Output(msg)) = output::finish() {
                output::say(&format!("error: {msg}"));
            }
            code
        }
    }
}

/// clap's error in one line: its first paragraph (what is wrong, and the
/// lines that continue it: the arguments missing, the values possible),
/// without the usage and the pointer to `--help` that follow.
fn clap_line(text: &str) -> String {
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = first.join(" ");
    if line.is_empty() {
        "error: bad arguments".into()
    } else {
        line
    }
}

/// The exit status of a failure, its line printed.
fn exit(f: Failure) -> ExitCode {
    match f {
        Failure::Usage(msg) => {
            output::say(&format!("error: {msg}"));
            ExitCode::from(2)
        }
        Failure::Stuck => ExitCode::from(1),
        Failure::Failed(msg) | Failure::Output(msg) => {
            output::say(&format!("error: {msg}"));
            ExitCode::from(1)
        }
        Failure::Closed => ExitCode::SUCCESS,
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Check { kind, args, format } => check::check(kind, args, format),
        Command::Run {
            file,
            print_defaults,
            trace,
            format,
        } => match (print_defaults, file) {
            (Some(e), _) => {
                let text = scenario::Scenario::defaults(e)
                    .to_toml()
                    .map_err(|e| Failure::Failed(e.to_string()))?;
                out_raw!("{text}");
                Ok(())
            }
            (None, Some(file)) => {
                if let Some(t) = trace.as_deref() {
                    output::out_file("--trace", t)?;
                    output::not_stdout("--trace", t)?;
                    if sweep::same_file(t, &file) {
                        return Err(Failure::Usage(format!(
                            "--trace {t} is the scenario {file}: write the trace to another file"
                        )));
                    }
                }
                run_file(&file, trace.as_deref(), format)
            }
            (None, None) => Err(Failure::Usage(
                "run needs a scenario file (or --print-defaults)".into(),
            )),
        },
        Command::Plot {
            kind,
            out,
            csv,
            jsonl,
            x,
            y,
            series,
        } => {
            output::out_file("--out", &out)?;
            // A flag the kind of plot would ignore is refused.
            let from = match kind {
                PlotKind::Csv => "csv",
                PlotKind::Jsonl => "jsonl",
                _ => "",
            };
            let stray = [
                (csv.is_some() && from != "csv", "--csv"),
                (jsonl.is_some() && from != "jsonl", "--jsonl"),
                (x.is_some() && from.is_empty(), "--x"),
                (y.is_some() && from.is_empty(), "--y"),
                (series.is_some() && from.is_empty(), "--series"),
            ];
            if let Some((_, f)) = stray.iter().find(|s| s.0) {
                let kind = kind
                    .to_possible_value()
                    .map_or(String::new(), |v| v.get_name().to_string());
                return Err(Failure::Usage(format!(
                    "{f} does not apply to plot {kind}, which draws from {}",
                    if from.is_empty() {
                        "the model"
                    } else {
                        "its own file flag"
                    }
                )));
            }
            if plot::image_format(&out).is_none() {
                return Err(Failure::Usage(format!(
                    "--out {out}: write .svg or .png (the extension names the format)"
                )));
            }
            // The plot never replaces the data it is drawn from.
            let input = [(&csv, "--csv"), (&jsonl, "--jsonl")];
            if let Some((f, flag)) = input.iter().find_map(|(f, flag)| {
                f.as_deref()
                    .filter(|f| sweep::same_file(&out, f))
                    .map(|f| (f, flag))
            }) {
                return Err(Failure::Usage(format!(
                    "--out {out} is the {flag} file {f}: write the plot to another file"
                )));
            }
            let chart = match kind {
                PlotKind::PerLine => plot::per_line(),
                PlotKind::Bandwidth => plot::bandwidth(),
                PlotKind::Chunk => plot::chunk(),
                PlotKind::Logp => plot::logp(),
                PlotKind::Csv => {
                    let (Some(f), Some(x), Some(y)) = (csv, x, y) else {
                        return Err(Failure::Usage(
                            "plot csv needs --csv FILE --x COLUMN --y COLUMN".into(),
                        ));
                    };
                    let text = output::read_input(&f)?;
                    plot::from_csv(&text, &x, &y, series.as_deref())
                        .map_err(|e| format!("{f}: {e}"))
                }
                PlotKind::Jsonl => {
                    let (Some(f), Some(x), Some(y)) = (jsonl, x, y) else {
                        return Err(Failure::Usage(
                            "plot jsonl needs --jsonl FILE --x COLUMN --y COLUMN".into(),
                        ));
                    };
                    let text = output::read_input(&f)?;
                    plot::from_jsonl(&text, &x, &y, series.as_deref())
                        .map_err(|e| format!("{f}: {e}"))
                }
            }
            .map_err(Failure::Usage)?;
            let bytes = plot::render(&chart, &out).map_err(Failure::Usage)?;
            output::write_file(&out, &bytes)
        }
        Command::Study {
            study: StudyKind::Coherence,
            bytes,
            plot,
            threads,
            quiet,
            format,
        } => study(bytes, plot, threads, quiet, format),
        Command::Sweep {
            file,
            vary,
            shard,
            out,
            resume,
            threads,
            quiet,
            format,
        } => {
            let text = output::read_input(&file)?;
            sweep::sweep(&sweep::Sweep {
                path: &file,
                text: &text,
                vary: &vary,
                shard: shard.as_deref(),
                threads,
                quiet,
                format: match format {
                    SweepFormat::Csv => sweep::RowFormat::Csv,
                    SweepFormat::Json => sweep::RowFormat::Json,
                    SweepFormat::Jsonl => sweep::RowFormat::Jsonl,
                },
                out: out.as_deref(),
                resume,
            })
        }
        Command::Merge { parts, out } => sweep::merge(&parts, out.as_deref()),
        Command::Costs {
            protocol,
            words,
            packet_words,
            network,
            format,
        } => {
            let c = scenario::MessagingCosts {
                protocol,
                words,
                packet_words,
                network,
            };
            report(
                scenario::messaging_costs(&c).map(|r| (r, None)),
                None,
                format,
            )
        }
        Command::Logp {
            platform,
            export,
            out,
            nodes,
            format,
        } => match (export, out) {
            (Some(e), Some(dir)) => logp_export(platform, e, nodes, &dir, format),
            (Some(_), None) => Err(Failure::Usage(
                "--export needs --out DIR, the folder to write the files in".into(),
            )),
            (None, Some(_)) => Err(Failure::Usage(
                "--out names the folder of an --export (loggopsim or simgrid)".into(),
            )),
            (None, None) => logp(platform, nodes, format),
        },
        Command::Suite {
            platform,
            benchmark,
            nodes,
            format,
        } => suite(platform, benchmark, nodes, format),
        Command::Transfer {
            bytes,
            sender,
            receiver,
            handler,
            chunk,
            src_offset,
            dst_offset,
            coherence,
            flush,
            strategy,
            placement,
            direction,
            receives,
            sends,
            receive_late,
            trace,
            format,
        } => {
            let t = scenario::Transfer {
                bytes,
                sender,
                receiver,
                handler,
                chunk,
                src_offset,
                dst_offset,
                coherence,
                flush,
                strategy,
                placement,
                direction,
                receives,
                sends,
                receive_first: !receive_late,
            };
            let s = scenario::Scenario {
                transfer: Some(t),
                ..Default::default()
            };
            let t = s.transfer.as_ref().expect("set");
            t.validate(s.machine.clone())
                .map_err(|e| Failure::Usage(flagged(&e)))?;
            if let Some(t) = trace.as_deref() {
                output::out_file("--trace", t)?;
                output::not_stdout("--trace", t)?;
            }
            report(
                scenario::run_traced(&s, trace.is_some()),
                trace.as_deref(),
                format,
            )
        }
        Command::FetchOp {
            remote_node,
            format,
        } => {
            let f = scenario::FetchOp { remote_node };
            let p = magic::MagicParams::default();
            report(
                scenario::fetch_op(&f, p, Default::default()).map(|r| (r.0, None)),
                None,
                format,
            )
        }
        Command::Remap { technique, format } => remap(technique, format),
        Command::Miss {
            case,
            nodes,
            offset,
            owner,
            format,
        } => {
            let m = scenario::Miss {
                case,
                nodes,
                offset,
                owner,
            };
            let p = magic::MagicParams::default();
            report(
                scenario::miss(&m, p, Default::default()).map(|r| (r.0, None)),
                None,
                format,
            )
        }
        Command::Pipeline {
            nodes,
            msgs,
            pattern,
            timing,
            format,
        } => {
            let cfg = PipelineConfig {
                nodes,
                msgs,
                pattern: match pattern {
                    PatternArg::Ring => Pattern::Ring,
                    PatternArg::Shift => Pattern::Shift,
                    PatternArg::Rand => Pattern::Rand,
                },
                costs: Default::default(),
                budget: magic::params::DEFAULT_BUDGET,
            };
            cfg.validate()
                .map_err(|e| Failure::Usage(out_of_range(&e)))?;
            let mut m =
                pipeline::build(&cfg).map_err(|e| Failure::Usage(cli_words(&e, e.field())))?;
            // wall_s times the event loop alone, outside the model (read
            // whether asked for or not, so asking changes no run).
            let t0 = Instant::now();
            let report = m.run();
            let wall_s = t0.elapsed().as_secs_f64();
            if let Some(h) = &report.halted {
                // A halted run's figures are no result: none is printed.
                output::say(&format!("error: {h}"));
                return Err(Failure::Stuck);
            }
            if !report.is_clean() {
                output::say("error: the run is not clean:");
                for s in report.problems() {
                    output::say(&format!("  {s}"));
                }
            }
            let clean = report.is_clean();
            let run = pipeline::summary(&cfg, &m, report);
            let r = run.result;
            // The run's JSON, and the event loop's wall-clock time beside it.
            let mut v = serde_json::to_value(&run).map_err(|e| Failure::Failed(e.to_string()))?;
            // Held to the rules every result keeps, as `run` of it is.
            flashkit::invariants::check(&v, &[&run.ledger], m.params().pp_issue_width)
                .map_err(|e| Failure::Failed(e.to_string()))?;
            if let Some(o) = v.as_object_mut().filter(|_| timing) {
                o.insert("wall_s".into(), wall_s.into());
            }
            match format {
                Format::Json => out!("{v}"),
                Format::Csv => out_raw!("{}", flashkit::sweep::csv_row(&v)),
                Format::Table => {
                    let rate = if timing {
                        format!(
                            " ({:.1} M events/s, {wall_s:.3} s event loop)",
                            r.events as f64 / wall_s / 1e6
                        )
                    } else {
                        String::new()
                    };
                    out!(
                        "pipeline: {} nodes x {} messages, {:?}\ncompletion      {} cycles\nsum_completion  {}\nsum_latency     {}\nevents          {}{rate}\n",
                        nodes,
                        msgs,
                        cfg.pattern,
                        r.completion,
                        r.sum_completion,
                        r.sum_latency,
                        r.events,
                    );
                    out_raw!("{}", run.ledger.summed().render());
                }
            }
            if clean {
                Ok(())
            } else {
                Err(Failure::Stuck)
            }
        }
    }
}

fn logp(p: scenario::PlatformKind, nodes: u32, format: Format) -> Result<(), Failure> {
    let l = scenario::Logp { platform: p, nodes };
    report(
        scenario::logp(&l, &Default::default()).map(|r| (r, None)),
        None,
        format,
    )
}

/// Write a platform's figures as LogGOPSim's or SimGrid's input into `dir`,
/// and list the files written (a line each, a JSON array, or a CSV column).
fn logp_export(
    p: scenario::PlatformKind,
    e: ExportArg,
    nodes: u32,
    dir: &str,
    format: Format,
) -> Result<(), Failure> {
    use protocols::am::export;
    let usage = |e: protocols::Error| Failure::Usage(cli_words(&e, e.field()));
    // The measurement's least nodes first, as `logp` itself says them.
    let c = scenario::platform_config(p, nodes, &Default::default());
    protocols::am::suite::check_nodes(&c, protocols::am::suite::LOGP_LEAST_NODES).map_err(usage)?;
    output::out_dir("--out", dir)?;
    let plat = c.build().map_err(usage)?;
    // A measurement that did not end (a budget reached) is no bad input.
    let f = protocols::am::suite::logp(plat.as_ref()).map_err(|e| match e {
        protocols::Error::OverBudget { .. } | protocols::Error::Incomplete(_) => {
            output::say(&format!("error: {e}"));
            Failure::Stuck
        }
        e => usage(e),
    })?;
    let files = match e {
        ExportArg::Loggopsim => export::loggopsim(&f, nodes),
        ExportArg::Simgrid => {
            export::Network::of(plat.as_ref()).and_then(|net| export::simgrid(&f, nodes, net))
        }
    }
    .map_err(|e| Failure::Failed(e.to_string()))?;
    let written: Vec<(String, &[u8])> = files
        .iter()
        .map(|file| {
            let path = std::path::Path::new(dir).join(file.name);
            (path.display().to_string(), file.text.as_bytes())
        })
        .collect();
    // Each file's place, before the folder is made or any file written (a
    // folder of the file's name is no place for it).
    for (path, _) in &written {
        if std::path::Path::new(path).is_dir() {
            return Err(Failure::Usage(format!(
                "--out {dir}: {path} is a folder, not a file to write"
            )));
        }
        // The list of files is printed.
        output::not_stdout("--out", path)?;
    }
    std::fs::create_dir_all(dir).map_err(|e| output::failed(dir, &e))?;
    output::write_files(&written)?;
    let names: Vec<String> = written.into_iter().map(|(name, _)| name).collect();
    list_out("file", &names, format)
}

/// A list of names as `format` says: a line each, a JSON array, or a CSV
/// column under `column`.
fn list_out(
    column: &str,
    items: &[impl AsRef<str> + serde::Serialize],
    format: Format,
) -> Result<(), Failure> {
    match format {
        Format::Json => out!(
            "{}",
            serde_json::to_string(items).map_err(|e| Failure::Failed(e.to_string()))?
        ),
        Format::Csv => {
            out!("{column}");
            for n in items {
                out!("{}", flashkit::sweep::csv_cell(n.as_ref()));
            }
        }
        Format::Table => {
            for n in items {
                out!("{}", n.as_ref());
            }
        }
    }
    Ok(())
}

fn suite(
    p: scenario::PlatformKind,
    benchmark: Option<String>,
    nodes: u32,
    format: Format,
) -> Result<(), Failure> {
    let x = scenario::Suite {
        platform: p,
        benchmark,
        nodes,
    };
    let r = scenario::suite(&x, &Default::default()).map_err(|e| failure(e, None))?;
    report(Ok((r, None)), None, format)
}

/// A suite's CSV: one block per benchmark (their columns differ), each
/// headed by its name, a blank line apart.
fn suite_csv(json: &serde_json::Value) {
    for t in json["tables"].as_array().into_iter().flatten() {
        // Labels as they are (quoted where they hold a comma), numbers as
        // JSON writes them, missing empty.
        let cells = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .map(|c| match c {
                    serde_json::Value::String(s) => flashkit::sweep::csv_cell(s),
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect()
        };
        out!("# {}", t["benchmark"].as_str().unwrap_or_default());
        out!("{}", cells(&t["columns"]).join(","));
        for row in t["rows"].as_array().into_iter().flatten() {
            out!("{}", cells(row).join(","));
        }
        out!();
    }
}

/// A field as the command line spells it: its flag.
fn flag(field: &str) -> String {
    format!("--{}", field.replace('_', "-"))
}

/// An error in the command line's words: the field it names (its error
/// type says which) opens the message as the field's flag.
fn cli_words(e: &dyn std::fmt::Display, field: Option<&str>) -> String {
    let msg = e.to_string();
    match field.and_then(|f| Some((f, msg.strip_prefix(f)?))) {
        Some((f, rest)) if rest.starts_with(' ') => format!("{}{rest}", flag(f)),
        _ => msg,
    }
}

/// A value out of range, in the command line's words.
pub(crate) fn out_of_range(e: &magic::OutOfRange) -> String {
    format!("{} must be {}, got {}", flag(e.field), e.allowed, e.got)
}

/// A transfer the experiment cannot set up, in the command line's words.
fn flagged(e: &protocols::transfer::ConfigError) -> String {
    use protocols::transfer::ConfigError;
    match e {
        ConfigError::Range(r) => out_of_range(r),
        ConfigError::Needs {
            field,
            value,
            other,
            other_value,
            why,
        }
        | ConfigError::Refuses {
            field,
            value,
            other,
            other_value,
            why,
        } => {
            let verb = match e {
                ConfigError::Needs { .. } => "needs",
                _ => "cannot go with",
            };
            format!(
                "{} {value} {verb} {} {other_value} ({why})",
                flag(field),
                flag(other)
            )
        }
        ConfigError::Change { .. } => e.to_string(),
    }
}

/// What a failed run means at the command line: bad input (its field
/// named by its flag, or by the scenario file's key) is status 2 with one
/// line; a model that stopped with work pending, 1.
fn failure(e: scenario::RunError, file: Option<&str>) -> Failure {
    use protocols::transfer::Failed;
    use scenario::RunError;
    match (e, file) {
        (e, _) if e.not_clean() => {
            output::say(&format!("error: {e}"));
            Failure::Stuck
        }
        (e, Some(path)) => Failure::Usage(format!("{path}: {e}")),
        (RunError::Transfer(Failed::Config(e)), None) => Failure::Usage(flagged(&e)),
        (e, None) => Failure::Usage(cli_words(&e, e.field())),
    }
}

/// Print a scenario's report; a failed run's check makes the exit status 1.
fn report(
    r: Result<(scenario::Report, Option<flashkit::magic::trace::Chrome>), scenario::RunError>,
    trace: Option<&str>,
    format: Format,
) -> Result<(), Failure> {
    let (r, tr) = r.map_err(|e| failure(e, None))?;
    if let (Some(path), Some(tr)) = (trace, tr) {
        // Serialized from the slices, never held as a JSON value: its
        // bytes, which `trace::MAX_SLICES` bounds, are staged whole so a
        // failed write leaves no part of a trace in the file's place.
        let bytes =
            serde_json::to_vec(&tr).map_err(|e| Failure::Failed(format!("--trace {path}: {e}")))?;
        output::write_file(path, &bytes)?;
    }
    match format {
        Format::Json => out!("{}", r.json),
        // A suite's figures are its tables (saved or run from a file alike).
        Format::Csv if r.json["tables"].is_array() => suite_csv(&r.json),
        Format::Csv => out_raw!("{}", flashkit::sweep::csv_row(&r.json)),
        Format::Table => out_raw!("{}", r.table),
    }
    if let Some(f) = r.failed {
        output::say(&format!("error: {f}"));
        return Err(Failure::Stuck);
    }
    Ok(())
}

fn run_file(path: &str, trace: Option<&str>, format: Format) -> Result<(), Failure> {
    let read = output::read_input(path)?;
    // A byte-order mark (some editors write one) is no part of the text.
    let text = read.strip_prefix('\u{feff}').unwrap_or(&read);
    if text.starts_with(flashkit::sweep::PART_MARK) {
        return Err(Failure::Usage(format!(
            "{path}: a sharded sweep's part (its first line is the `{}` mark), not a scenario \
             or a saved result: run the sweep's scenario, or merge its parts (flashkit merge)",
            flashkit::sweep::PART_MARK.trim_end()
        )));
    }
    // A saved result is JSON (a scenario, TOML, never opens with a brace).
    if path.ends_with(".json") || text.trim_start().starts_with('{') {
        return rerun(path, text, trace, format);
    }
    let src = scenario::Source { path, text };
    let t = scenario::table(&src).map_err(|e| Failure::Usage(e.to_string()))?;
    let s = scenario::parse(&src, t).map_err(|e| Failure::Usage(e.to_string()))?;
    // What the run refuses is the file's, in its keys' words: a field at
    // the line that sets it.
    let r = scenario::run_traced(&s, trace.is_some()).map_err(|e| match e.range() {
        Some(r) => Failure::Usage(src.in_tables(&scenario::tables_of(&s), r).to_string()),
        None => failure(e, Some(path)),
    })?;
    report(Ok(r), trace, format)
}

/// Run a saved result's configuration again and print the result as a
/// scenario's; where the new result differs from the saved one, one line
/// on standard error says in which keys.
fn rerun(path: &str, text: &str, trace: Option<&str>, format: Format) -> Result<(), Failure> {
    let saved = scenario::Saved::read(text).map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
    let r = scenario::rerun(&saved, trace.is_some()).map_err(|e| {
        // A value out of range is named where the saved JSON holds it
        // (`config.user.tlb.entries`), where one key of that name does.
        let at = e
            .range()
            .and_then(|r| Some((r.field, saved.path_of(r.field)?)));
        match at {
            Some((field, p)) => {
                // What follows the field's name in the message (a prefix
                // such as `network: ` before it goes).
                let msg = e.to_string();
                let rest = msg
                    .find(&format!("{field} "))
                    .map_or(msg.as_str(), |i| &msg[i + field.len()..])
                    .trim_start();
                Failure::Usage(format!("{path}: {p}: {rest}"))
            }
            None => failure(e, Some(path)),
        }
    })?;
    let (mut old, new) = (saved.json(), &r.0.json);
    // Whether the run recorded its timelines is this rerun's to say (by
    // --trace), and its config says so.
    if let Some(t) = old.pointer_mut("/config/trace") {
        *t = serde_json::Value::Bool(trace.is_some());
    }
    if let (Some(old), Some(new)) = (old.as_object(), new.as_object()) {
        let differ: Vec<&str> = old
            .iter()
            .filter(|(k, v)| new.get(k.as_str()) != Some(v))
            .map(|(k, _)| k.as_str())
            .chain(
                new.keys()
                    .filter(|k| !old.contains_key(*k))
                    .map(|k| k.as_str()),
            )
            .collect();
        if !differ.is_empty() {
            output::say(&format!(
                "note: the rerun differs from {path} (measured by flashkit {}) in {}",
                saved.version(),
                differ.join(", ")
            ));
        }
    }
    if let (Format::Csv, scenario::Saved::Study(_)) = (format, &saved) {
        // A study's CSV is its rows', as `flashkit study --format csv` writes it.
        let s: flashkit::study::Study =
            serde_json::from_value(r.0.json).map_err(|e| Failure::Failed(e.to_string()))?;
        study_csv(&s);
        return Ok(());
    }
    report(Ok(r), trace, format)
}

/// The coherence-mode study on FLASH's machine and cost sheets.
fn study(
    bytes: u64,
    plot: Option<String>,
    threads: Option<usize>,
    quiet: bool,
    format: Format,
) -> Result<(), Failure> {
    let threads = sweep::threads(threads)?;
    // A size no mode can take is the user's mistake, named by its flag.
    let first = scenario::StudyPoint {
        bytes,
        ..Default::default()
    };
    first
        .refusal(magic::MagicParams::default())
        .map_err(|e| Failure::Usage(flagged(&e)))?;
    if let Some(p) = &plot {
        if flashkit::plot::image_format(p).is_none() {
            return Err(Failure::Usage(format!("--plot {p}: write .svg or .png")));
        }
        output::out_file("--plot", p)?;
        output::not_stdout("--plot", p)?;
    }
    let total = flashkit::study::points(bytes).len();
    let bar = sweep::progress(total, "runs", quiet);
    let s = flashkit::study::run(&scenario::Scenario::default(), bytes, threads, |n, _| {
        bar.set_position(n as u64)
    })
    .map_err(|e| failure(e, None))?;
    bar.finish_and_clear();
    if let Some(p) = &plot {
        let image = plot::render(&s.chart(), p).map_err(Failure::Usage)?;
        output::write_file(p, &image)?;
    }
    match format {
        // One line with its keys in order, as every result prints (and as
        // `flashkit run` prints it again from the saved file).
        Format::Json => out!(
            "{}",
            serde_json::to_value(&s).map_err(|e| Failure::Failed(e.to_string()))?
        ),
        Format::Csv => study_csv(&s),
        Format::Table => out_raw!("{s}"),
    }
    Ok(())
}

/// A study's CSV (its runs' rows), and on standard error how many
/// combinations it refused, which have no row: the JSON lists each.
fn study_csv(s: &flashkit::study::Study) {
    out_raw!("{}", s.csv());
    if !s.refused.is_empty() {
        output::say(&format!(
            "note: {} combinations refused, not in the CSV (the JSON and the table list each with its reason)",
            s.refused.len()
        ));
    }
}

fn remap(t: scenario::TechniqueKind, format: Format) -> Result<(), Failure> {
    let x = scenario::Remap { technique: t };
    let r =
        scenario::remap(&x, magic::MagicParams::default(), Default::default()).map(|r| (r.0, None));
    report(r, None, format)
}
