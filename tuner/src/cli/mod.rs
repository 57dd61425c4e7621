//! The `tilekit` command line, built on `tilekit_tuner`'s library API.
//!
//! `list`, `show` and `cache` work without a GPU; `devices` reports what it finds; `tune`
//! and `bench` need a CUDA GPU and say so clearly when there is none.

/// `print!` to standard output that ends the process quietly when the reader has gone
/// (`tilekit list | head -1`), as `print!` would panic there.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` through [`out!`].
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod bench;
mod cache;
mod gpu;
mod list;
mod paths;
mod progress;
mod resources;
mod roofline;
mod show;
mod table;
mod tune;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// tilekit: tile-level GPU kernels with an autotuner.
#[derive(Parser, Debug)]
#[command(name = "tilekit", version, about, after_help = paths::ENV_HELP)]
pub struct Cli {
    /// The tuning cache (a sled directory); default `$TILEKIT_TUNE_CACHE`, else
    /// `<data dir>/tilekit/tune.sled` (`$TILEKIT_CACHE_DIR` moves only the CUBIN cache).
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_path: Option<PathBuf>,
    /// Print errors only (no warnings).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more: `-v` information, `-vv` debugging (`TILEKIT_LOG`, a tracing filter such
    /// as `tilekit_tuner=debug`, overrides both).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// The library's kernels: tuning spaces, problem dimensions, constraints and phases.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The generated CUDA of one variant of a kernel (or its IR with --ir).
    Show(show::ShowArgs),
    /// The tuning cache: show, export, import, merge, clear.
    Cache {
        /// What to do with it.
        #[command(subcommand)]
        action: cache::CacheAction,
    },
    /// CUDA devices and their tuning identity.
    Devices,
    /// Tune a kernel on this machine's GPU (needs a CUDA GPU).
    Tune(tune::TuneArgs),
    /// Tuned vs default (and given configurations and peers) on this machine's GPU, beside
    /// the measured copy bandwidth; optionally a roofline SVG (needs a CUDA GPU).
    Bench(bench::BenchArgs),
}

/// Parses the command line, runs it, and maps errors to exit codes (1: failed, 2: usage
/// or no GPU, as printed).
pub fn main() -> ExitCode {
    // Started as a tuning worker by `tilekit tune`: serve and exit.
    tilekit_tuner::tune::worker_main(tilekit_kernels::ALL);
    let cli = Cli::parse();
    install_logging(cli.quiet, cli.verbose);
    let cache_path = cli.cache_path.clone();
    let result = match cli.command {
        Command::List { json } => list::run(json),
        Command::Show(args) => show::run(&args),
        Command::Cache { action } => cache::run(cache_path, &action),
        Command::Devices => gpu::devices(cache_path.as_deref()),
        Command::Tune(args) => gpu::tune(cache_path, &args),
        Command::Bench(args) => gpu::bench(cache_path, &args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tilekit: error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, joined by `: ` as `{:#}` would, but each text once: a cause
/// whose text the message already holds (a message that embeds its source, as many
/// `thiserror` messages do) is not repeated.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// Writes to standard output; a reader that has gone (broken pipe) ends the process
/// quietly with status 0, any other failure with a message and status 1.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("tilekit: error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// The environment variable holding a tracing filter for the CLI's messages.
const LOG_ENV: &str = "TILEKIT_LOG";

/// Sends the library's `tracing` events to standard error: warnings and errors by default,
/// errors only with `-q`, more with `-v`; `$TILEKIT_LOG` (an `EnvFilter` directive) wins.
fn install_logging(quiet: bool, verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = match std::env::var(LOG_ENV) {
        Ok(s) if !s.trim().is_empty() => EnvFilter::try_new(&s).unwrap_or_else(|e| {
            eprintln!("tilekit: warning: ${LOG_ENV} is not a filter ({e}); using `{level}`");
            EnvFilter::new(level)
        }),
        _ => EnvFilter::new(level),
    };
    // Fails only when a subscriber is already set (never, in this binary).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .try_init();
}

/// A library kernel by name, or an error listing the names.
pub fn find_kernel(name: &str) -> anyhow::Result<&'static tilekit_runtime::KernelSpec> {
    tilekit_kernels::ALL
        .iter()
        .copied()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = tilekit_kernels::ALL.iter().map(|s| s.name).collect();
            anyhow::anyhow!("no library kernel `{name}` (kernels: {})", names.join(", "))
        })
}
