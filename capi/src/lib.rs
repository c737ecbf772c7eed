//! The C ABI of [pica-jit](https://docs.rs/pica-jit): load a SHBIN, prepare a
//! shader, set per-draw uniforms, and run one vertex or a batch of vertices from
//! C or C++, with geometry-shader emits delivered to a C callback.
//!
//! The header is `include/pica_jit.h`, generated from this crate by `cbindgen`
//! (the `header_is_current` test fails when it is stale; run it with
//! `PICA_BLESS_HEADER=1` to rewrite it). Build `libpica_jit_capi.a` / `.so` with
//! `cargo build -p pica-jit-capi --release`.
//!
//! # Contract
//! - Every function returns a [`PicaStatus`] (or a plain value that cannot fail);
//!   on an error, `pica_last_error()` returns the message on the same thread.
//! - No Rust panic crosses into C: every entry point catches them
//!   (`PICA_STATUS_PANIC`).
//! - Null pointers and handles of the wrong type are `PICA_STATUS_NULL_ARGUMENT` /
//!   `PICA_STATUS_INVALID_HANDLE`. A freed handle is reported while its memory is
//!   not reused, but using one is still a bug, as with any C API.
//! - Enumerations are passed as `uint32_t` and validated
//!   (`PICA_STATUS_INVALID_ARGUMENT` for an unknown value).
//! - Threads: `PicaProgram`, `PicaShader` and (unchanged) `PicaUniforms` may be
//!   used from several threads at once; a `PicaState` belongs to one run at a
//!   time. The emit callback runs on the calling thread and must not unwind
//!   (no C++ exception may leave it).

mod error;
mod handle;
mod objects;
mod program;
mod run;
mod shader;
mod state;
mod types;
mod uniforms;
mod version;

pub use error::{PicaStatus, pica_last_error};
pub use objects::{PicaProgram, PicaShader, PicaState, PicaUniforms};
pub use program::*;
pub use run::*;
pub use shader::*;
pub use state::*;
pub use types::*;
pub use uniforms::*;
pub use version::*;
