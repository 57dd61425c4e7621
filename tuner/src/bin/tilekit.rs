//! The `tilekit` command line: list, show, cache, devices, tune, bench.

#[path = "../cli/mod.rs"]
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
