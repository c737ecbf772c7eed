//! How a test that needs `../shared/corpus` skips: with a note the test harness
//! does not capture (written to the process's stderr directly), and as a failure
//! when `PICA_REQUIRE_CORPUS=1` (set by `.ci/run` when the corpus exists), so a
//! corpus test that silently stopped finding its files fails CI.

use std::io::Write as _;

/// Reports that `test` found no corpus at `path`: panics under
/// `PICA_REQUIRE_CORPUS=1`, otherwise prints a visible `SKIPPED` line.
pub fn corpus_absent(test: &str, path: &str) {
    if std::env::var_os("PICA_REQUIRE_CORPUS").is_some_and(|v| v == "1") {
        panic!("{test}: PICA_REQUIRE_CORPUS=1 but no corpus at {path}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no corpus at {path} (PICA_REQUIRE_CORPUS=1 makes this a failure)"
    );
}
