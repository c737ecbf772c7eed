//! The `disasm` and `run` commands.

use crate::error::CliError;
use crate::{input, output};
use pica_jit::shbin::Shbin;
use pica_jit::{EngineKind, Precision, Program, Shader, ShaderConfig, Uniforms};
use serde_json::json;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

const DEFAULT_NAME: &str = "<default shader>";

/// Reads and parses the shader file, or the embedded default shader.
fn load(file: Option<&Path>) -> Result<(String, Shbin), CliError> {
    let (name, bytes) = match file {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|source| CliError::Io {
                path: name.clone(),
                source,
            })?;
            (name, bytes)
        }
        None => (DEFAULT_NAME.to_string(), pica_jit::DEFAULT_SHADER.to_vec()),
    };
    let shbin = Shbin::parse(&bytes).map_err(|source| CliError::Shbin {
        path: name.clone(),
        source,
    })?;
    Ok((name, shbin))
}

pub fn disasm(file: Option<&Path>) -> Result<String, CliError> {
    let (name, shbin) = load(file)?;
    Ok(pica_jit::describe_shbin(&name, &shbin))
}

pub struct RunArgs<'a> {
    pub file: Option<&'a Path>,
    pub dvle: usize,
    pub engine: &'a str,
    pub precision: &'a str,
    pub budget: u64,
    pub input: Option<&'a str>,
}

fn read_input(input: Option<&str>) -> Result<String, CliError> {
    match input {
        None => Ok("{}".to_string()),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| CliError::Io {
                    path: "<stdin>".into(),
                    source,
                })?;
            Ok(text)
        }
        Some(path) => std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: path.into(),
            source,
        }),
    }
}

pub fn run(args: RunArgs<'_>) -> Result<String, CliError> {
    let engine: EngineKind = args.engine.parse()?;
    let precision: Precision = args.precision.parse()?;
    let (name, shbin) = load(args.file)?;
    let count = shbin.dvles.len();
    let dvle = shbin.dvles.get(args.dvle).ok_or(CliError::NoSuchDvle {
        path: name.clone(),
        index: args.dvle,
        count,
    })?;
    let input = input::parse(&read_input(args.input)?)?;

    let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).map_err(
        |source| CliError::Program {
            path: name.clone(),
            source,
        },
    )?;
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        precision,
        budget: args.budget,
    };
    let shader = Shader::new(Arc::new(program), config, engine)?;
    if let Err(e) = shader.prepare() {
        // Never a silent fallback: the JSON's `engine` says `interp` too.
        eprintln!("pica-jit: warning: {e}; running on the interpreter instead");
    }

    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    input.apply(&mut uniforms);

    let results: Vec<_> = input
        .vertices
        .iter()
        .map(|vertex| {
            let mut state = input.state.clone();
            for &(n, v) in vertex {
                state.inputs[n] = v;
            }
            let mut emits = Vec::new();
            let stop = shader.run(&uniforms, &mut state, &mut emits);
            output::result(stop, &state, &emits)
        })
        .collect();
    let doc = json!({
        "engine": shader.engine().name(),
        "precision": match precision { Precision::F24 => "f24", Precision::F32 => "f32" },
        "results": results,
    });
    let mut text = serde_json::to_string(&doc).map_err(CliError::Json)?;
    let _ = writeln!(text);
    Ok(text)
}
