//! Everything that can go wrong on the command line, with actionable messages.

use pica_jit::shbin::ShbinError;
use pica_jit::{EngineError, ProgramError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CliError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{}:{}:{}: {}", .0.file, .0.line, .0.column, .0.kind)]
    Asm(#[from] pica_jit::asm::AsmError),
    #[error("{path} is not a valid shader binary: {source}")]
    Shbin { path: String, source: ShbinError },
    #[error("{path}: {source}")]
    Program { path: String, source: ProgramError },
    #[error("{path} has {count} DVLE(s); --dvle {index} does not exist{}", if *count == 0 { String::new() } else { format!(" (valid: 0 to {})", count - 1) })]
    NoSuchDvle {
        path: String,
        index: usize,
        count: usize,
    },
    #[error(
        "{path} DVLE {index} is a geometry shader; `bench` measures vertex shaders ({})",
        match vertex_dvles.as_slice() {
            [] => "this file has none".to_string(),
            list => format!(
                "pass one of the vertex DVLEs with --dvle: {}",
                list.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
            ),
        }
    )]
    NotAVertexShader {
        path: String,
        index: usize,
        vertex_dvles: Vec<usize>,
    },
    #[error(
        "engine `{engine}` cannot run {path}: {reason}; leave it out with --engine (for example --engine interp)"
    )]
    EngineCannotRun {
        engine: &'static str,
        path: String,
        reason: String,
    },
    #[error("{path} has no source listing: {message}")]
    Listing { path: String, message: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("input is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("input {path}: {message}")]
    Input { path: String, message: String },
}

impl CliError {
    pub fn input(path: &str, message: impl Into<String>) -> CliError {
        CliError::Input {
            path: path.to_string(),
            message: message.into(),
        }
    }
}
