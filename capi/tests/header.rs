//! `include/pica_jit.h` is exactly what cbindgen generates from this crate now:
//! a change to the C API without regenerating the header fails here.
//! `PICA_BLESS_HEADER=1` rewrites the header instead.

use std::path::Path;

#[test]
fn header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../include/pica_jit.h");
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen cannot parse the C API")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    if std::env::var_os("PICA_BLESS_HEADER").is_some() {
        std::fs::write(&header, &generated).expect("write header");
        return;
    }
    let committed = std::fs::read_to_string(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/pica_jit.h is stale: regenerate it with \
         `PICA_BLESS_HEADER=1 cargo test -p pica-jit-capi --test header` and commit it"
    );
}
