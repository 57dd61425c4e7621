//! The `tilekit` command line as a library: [`cli_main`] gives any binary the commands
//! `list`, `show`, `cache`, `devices`, `tune` and `bench` over the kernels it names (the
//! `tilekit` binary of the `tilekit-cli` package names the kernel library; a user's binary
//! names its own kernels, and tuning runs workers of that same binary: no second program).
//!
//! `list`, `show` and `cache` work without a GPU; `devices` reports what it finds; `tune`
//! and `bench` need a CUDA GPU and say so clearly when there is none.
//!
//! ```no_run
//! // A user's `main` (with `tilekit = { features = ["tune"] }`, `tilekit::cli_main`):
//! # mod my_kernel { pub static SPEC: tilekit_runtime::KernelSpec =
//! #     tilekit_runtime::KernelSpec::new("k", "{}", "", "", 0); }
//! fn main() -> std::process::ExitCode {
//!     tilekit_tuner::cli::cli_main(&[&my_kernel::SPEC])
//! }
//! ```

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

/// `eprintln!` with control characters escaped (see [`escape`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod bench;
mod cache;
mod device_list;
mod escape;
mod gpu;
mod list;
mod paths;
mod progress;
mod resources;
mod roofline;
mod shard;
mod show;
mod show_args;
mod table;
mod tune;

mod catalog;

pub(crate) use catalog::catalog;
pub use catalog::Catalog;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
pub use device_list::{DeviceList, DeviceListParseError, OpenDevicesError};
pub use shard::{Shard, ShardParseError};
use std::path::PathBuf;
use std::process::ExitCode;

/// tilekit: tile-level GPU kernels with an autotuner.
#[derive(Parser, Debug)]
#[command(
    name = "tilekit",
    version,
    about = "tilekit: tile-level GPU kernels with an autotuner. List, inspect, tune and time this program's kernels.",
    after_help = paths::ENV_HELP
)]
pub(crate) struct Cli {
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
pub(crate) enum Command {
    /// The kernels of this program: tuning spaces, problem dimensions, constraints and phases.
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

/// The command line over `kernels` (no shipped tuning layer, no representative problems:
/// `tune` needs `--kernel` and `--shape`): parses the process's arguments, runs the command,
/// and maps errors to exit codes (0: done, 1: failed, 2: usage or no GPU, as printed).
/// Call it first in `main`: when `tilekit tune` starts this binary as a tuning worker, it
/// serves and exits here.
pub fn cli_main(kernels: &[&'static tilekit_runtime::KernelSpec]) -> ExitCode {
    cli_main_with(Catalog::new(kernels))
}

/// [`cli_main`] with a full [`Catalog`] (what the `tilekit` binary passes for the kernel
/// library: its shipped tuning layer and the problems of `tune --all`).
pub fn cli_main_with(catalog: Catalog) -> ExitCode {
    let catalog = catalog::install(catalog);
    // Started as a tuning worker by `tune`: serve and exit.
    crate::tune::worker_main(catalog.kernels());
    let program = std::env::args_os()
        .next()
        .as_deref()
        .and_then(|p| std::path::Path::new(p).file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("tilekit")
        .to_string();
    let matches = Cli::command().bin_name(program).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
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
            errln!("tilekit: error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, joined by `: ` as `{:#}` would, but each text once: a cause
/// whose text the message already holds (a message that embeds its source, as many
/// `thiserror` messages do) is not repeated.
pub(crate) fn error_chain(e: &anyhow::Error) -> String {
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

/// Writes to standard output, control characters but newlines and tabs escaped
/// ([`escape::escape_stream`]: stored data never reaches the terminal as an escape
/// sequence); a reader that has gone (broken pipe) ends the process quietly with status 0,
/// any other failure with a message and status 1.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = args.to_string();
    let text = escape::escape_stream(&text);
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        errln!("tilekit: error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// Writes to standard error, control characters but newlines and tabs escaped (as
/// [`write_stdout`]); a failure is ignored, as `eprint!` would panic instead.
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = args.to_string();
    let _ = std::io::stderr()
        .lock()
        .write_all(escape::escape_stream(&text).as_bytes());
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
            errln!("tilekit: warning: ${LOG_ENV} is not a filter ({e}); using `{level}`");
            EnvFilter::new(level)
        }),
        _ => EnvFilter::new(level),
    };
    // Fails only when a subscriber is already set (never, in this binary).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| escape::Escaping(std::io::stderr()))
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .try_init();
}

/// A kernel of the catalog by name, or an error listing the names.
pub(crate) fn find_kernel(name: &str) -> anyhow::Result<&'static tilekit_runtime::KernelSpec> {
    let kernels = catalog().kernels();
    kernels
        .iter()
        .copied()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = kernels.iter().map(|s| s.name).collect();
            anyhow::anyhow!(
                "no kernel `{name}` in this program (kernels: {})",
                names.join(", ")
            )
        })
}
