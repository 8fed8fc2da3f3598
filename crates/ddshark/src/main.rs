use std::process::ExitCode;

use clap::Parser;
use ddshark::cli::{Cli, Command, UsageError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, NOTHING_TO_DO};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The documentation's command lines are run through this parser by the test suite
    // (crates/ddshark/tests/docs.rs): parse them, then stop.
    if std::env::var_os("DDSHARK_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS;
    }
    let result = match cli.command {
        None if !cli.daemon.wanted() => {
            eprintln!("{NOTHING_TO_DO}");
            return ExitCode::from(EXIT_USAGE);
        }
        None => ddshark::daemon::run(&cli.daemon),
        Some(Command::Stats(args)) => ddshark::stats_cmd::run(&args),
        Some(Command::Dissect {
            file,
            format,
            quiet,
        }) => ddshark::dissect::run(&file, format, quiet),
        Some(Command::Latency(args)) => ddshark::latency::run(&args),
        Some(Command::Join(args)) => span_join::serve::run(&args),
    };
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(e) => {
            eprintln!("ddshark: error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_FAILURE)
            }
        }
    }
}
