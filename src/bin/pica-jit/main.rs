//! `pica-jit`: disassemble and run PICA200 shaders from the command line.
//!
//! The `run` JSON contract is documented in the README; it is a public interface.

mod commands;
mod error;
mod input;
mod output;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// PICA200 shader recompiler: disassemble or run a SHBIN shader.
#[derive(Parser, Debug)]
#[command(name = "pica-jit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the DVLEs (type, entry, outputs, uniforms, constants) and the code listing.
    Disasm {
        /// SHBIN file; the embedded default shader when omitted.
        file: Option<PathBuf>,
    },
    /// Run one invocation per input vertex and print the results as JSON.
    Run {
        /// SHBIN file; the embedded default shader when omitted.
        file: Option<PathBuf>,
        /// Which DVLE (entry point) to run.
        #[arg(long, default_value_t = 0)]
        dvle: usize,
        /// Engine: interp, jit, ir (the IR evaluator, for verification) or auto
        /// (the best this host has).
        #[arg(long, default_value = "auto")]
        engine: String,
        /// Arithmetic precision: f24 (hardware-faithful) or f32.
        #[arg(long, default_value = "f24")]
        precision: String,
        /// Most instructions one invocation may execute.
        #[arg(long, default_value_t = pica_jit::DEFAULT_BUDGET)]
        budget: u64,
        /// JSON input file, or `-` for standard input; `{}` when omitted.
        #[arg(long)]
        input: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: print to stdout and succeed.
            return match write_stdout(&e.to_string()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => fail(&err),
            };
        }
        Err(e) => {
            // One line, like every other error: clap's first line plus a pointer.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("pica-jit: error: {first} (see `pica-jit --help`)");
            return ExitCode::from(1);
        }
    };
    let result = match cli.command {
        Command::Disasm { file } => commands::disasm(file.as_deref()),
        Command::Run {
            file,
            dvle,
            engine,
            precision,
            budget,
            input,
        } => commands::run(commands::RunArgs {
            file: file.as_deref(),
            dvle,
            engine: &engine,
            precision: &precision,
            budget,
            input: input.as_deref(),
        }),
    };
    match result.and_then(|text| write_stdout(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &error::CliError) -> ExitCode {
    eprintln!("pica-jit: error: {e}");
    ExitCode::from(1)
}

/// Writes the whole output, reporting (not panicking on) a closed or full stdout.
fn write_stdout(text: &str) -> Result<(), error::CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| error::CliError::Io {
            path: "<stdout>".into(),
            source,
        })
}
