//! The `flashkit` command-line program.

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
    /// Run the engine benchmark workload: every node sends MSGS messages of 32
    /// packets through three fixed-cost handlers on MAGIC.
    ///
    /// Example: flashkit pipeline --nodes 64 --msgs 1000 --pattern rand --format json
    Pipeline {
        /// Nodes in the machine (2 to 256).
        #[arg(long, default_value_t = 16)]
        nodes: u32,
        /// Messages each node sends.
        #[arg(long, default_value_t = 1000)]
        msgs: u32,
        /// How each node picks its destinations.
        #[arg(long, value_enum, default_value_t = PatternArg::Ring)]
        pattern: PatternArg,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum PatternArg {
    Ring,
    Shift,
    Rand,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Table,
    Json,
}

/// Why a command failed.
enum Failure {
    /// Bad input from the user: one line on stderr, exit status 2.
    Usage(String),
    /// The model stopped with work pending (what is stuck was printed): status 1.
    Stuck,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // clap explains over several lines; the first one says what is wrong.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Stuck) => ExitCode::from(1),
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Pipeline {
            nodes,
            msgs,
            pattern,
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
            };
            let mut m = pipeline::build(&cfg).map_err(Failure::Usage)?;
            // wall_s times the event loop alone, outside the model.
            let t0 = Instant::now();
            let report = m.run();
            let wall_s = t0.elapsed().as_secs_f64();
            let r = pipeline::result(&m);
            if !report.is_clean() {
                eprintln!("error: the model stopped with work pending:");
                for s in &report.stuck {
                    eprintln!("  {s}");
                }
            }
            match format {
                Format::Json => {
                    let v = serde_json::json!({
                        "completion": r.completion,
                        "sum_completion": r.sum_completion,
                        "sum_latency": r.sum_latency,
                        "events": r.events,
                        "wall_s": wall_s,
                    });
                    println!("{v}");
                }
                Format::Table => {
                    println!(
                        "pipeline: {} nodes x {} messages, {:?}\ncompletion      {} cycles\nsum_completion  {}\nsum_latency     {}\nevents          {} ({:.1} M events/s, {:.3} s event loop)\n",
                        nodes,
                        msgs,
                        cfg.pattern,
                        r.completion,
                        r.sum_completion,
                        r.sum_latency,
                        r.events,
                        r.events as f64 / wall_s / 1e6,
                        wall_s
                    );
                    print!("{}", m.ledger().summed().render());
                }
            }
            if report.is_clean() {
                Ok(())
            } else {
                Err(Failure::Stuck)
            }
        }
    }
}
