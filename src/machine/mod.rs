//! The machine model every engine shares: how an invocation is configured, why it
//! stops, the hardware's control-flow stacks and resumable progress.
//!
//! It sits below the interpreter and the JIT so that both implement one model: the
//! interpreter transcribes it, generated code operates on the same `repr(C)` layouts.

mod config;
pub mod flow;
mod progress;
mod stop;

pub use config::{DEFAULT_BUDGET, ShaderConfig};
pub use progress::{EmitConfig, Progress};
pub use stop::{RunStatus, Stop};
