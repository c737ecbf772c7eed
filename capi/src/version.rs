//! Version queries.

use std::ffi::c_char;

/// The library version, e.g. "0.1.0" (a static string; never free it).
#[unsafe(no_mangle)]
pub extern "C" fn pica_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// The library version as `major << 16 | minor << 8 | patch`.
#[unsafe(no_mangle)]
pub extern "C" fn pica_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    (part(env!("CARGO_PKG_VERSION_MAJOR")) << 16)
        | (part(env!("CARGO_PKG_VERSION_MINOR")) << 8)
        | part(env!("CARGO_PKG_VERSION_PATCH"))
}
