#!/usr/bin/env bash
# Runs the whole test suite (unit tests, every jit-tests target, doctests) for
# aarch64-unknown-linux-gnu under qemu-user, so the AArch64 (NEON) backend is
# tested on real AArch64 code from an x86-64 Debian machine.
#
# Usage: scripts/test-aarch64.sh [extra cargo test args, e.g. a test filter]
#   With no arguments: clippy for aarch64 (so AArch64-only code is linted; the
#   x86-64 CI step cannot see it), the whole suite, then the replay of the
#   differential fuzz corpus (fuzz/corpus/diff_interp_jit, when present) on the
#   AArch64 JIT.
#   With arguments: `cargo test --target aarch64-unknown-linux-gnu ARGS` only,
#   e.g. `scripts/test-aarch64.sh --lib a64` or `scripts/test-aarch64.sh --test cli`.
#
# Environment:
#   PICA_A64_SKIP_INSTALL=1   never run apt-get (fail if something is missing)
#   PICA_A64_TARGET_DIR=DIR   cargo target dir (default: target/aarch64)
#   PICA_DIFF_CASES           random programs of jit-tests/differential.rs (default here:
#                             2500, half the native default: under qemu that suite took
#                             ~470 s of CI's time; x86-64 and Windows still run 5000)
#   PICA_WIDE_CASES           random programs of jit-tests/wide.rs (default here: 200,
#                             a third of the native default: qemu runs them ~20x slower)
#   PICA_WIDE_SAMPLE          the differential suites check the wide engine on one
#                             random case in this many (default here: 16; natively 1)
#   PICA_CLI_STRIDE           jit-tests/cli.rs's truncation and corruption sweeps spawn
#                             the binary at one byte position in this many (default
#                             here: 8; natively 1): the parser is host-independent and
#                             each spawn costs ~0.2 s under qemu (the sweeps took ~300 s)
#
# It installs what is missing (Debian packages, idempotent: apt is skipped when
# everything is present), then builds with Debian's cargo/rustc (which ship an
# aarch64 standard library as a package, no rustup download) in a separate target
# dir so it never fights the rustup toolchain's x86-64 builds. Linker and runner
# are passed as environment variables; no .cargo/config.toml is involved, so a
# normal x86-64 build is unaffected. Exits non-zero when anything fails.
set -euo pipefail

TARGET=aarch64-unknown-linux-gnu
# The guest's root for qemu: the arm64 multiarch libc (libc6:arm64, which
# libstd-rust-web-dev:arm64 depends on) with its own dynamic loader. Not
# /usr/aarch64-linux-gnu: the cross package's older ld.so would load the
# multiarch libc.so.6 through /etc/ld.so.cache, and that mismatched pair hangs
# in the first pthread call.
QEMU_ROOT=/

# Runner mode (cargo calls `test-aarch64.sh --qemu-runner EXE ARGS...` for every
# test executable and doctest). Test processes run under qemu-user, and a child
# process they spawn goes straight to the host kernel, which cannot execute an
# aarch64 ELF without binfmt_misc (not available in containers). So before each
# test executable runs, the `pica-jit` binary beside it (which the CLI tests
# spawn through CARGO_BIN_EXE_pica-jit) is hard-linked as `pica-jit.aarch64` and
# replaced by a tiny shell script that runs that under qemu (argv[0] preserved).
# Cargo puts the real binary back on its next build; this is repeated then.
if [[ ${1:-} == --qemu-runner ]]; then
    shift
    exe=$1
    dir=$(dirname "$exe")
    [[ $(basename "$dir") == deps ]] && dir=$(dirname "$dir")
    bin=$dir/pica-jit
    if [[ -f $bin && $(head -c 4 "$bin" | od -An -c | tr -d ' ') == '177ELF' ]]; then
        # A hard link: cargo's own copy (deps/pica_jit-*) keeps the same inode.
        ln -f "$bin" "$bin.aarch64"
        printf '#!/bin/sh\nexec qemu-aarch64 -L %s -0 "%s" "%s" "$@"\n' \
            "$QEMU_ROOT" "$bin" "$bin.aarch64" >"$bin.tmp"
        chmod +x "$bin.tmp"
        mv -f "$bin.tmp" "$bin"
    fi
    exec qemu-aarch64 -L "$QEMU_ROOT" "$@"
fi

cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEB_CARGO=/usr/bin/cargo
DEB_RUSTC=/usr/bin/rustc
DEB_RUSTDOC=/usr/bin/rustdoc
DEB_CLIPPY=/usr/bin/cargo-clippy
PACKAGES=(rustc-web cargo-web rust-web-clippy libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)

STEP_TAG=aarch64
# shellcheck source=scripts/lib/toolchain.sh
source scripts/lib/toolchain.sh

# ---------------------------------------------------------------------------
# 1. Toolchain
missing() {
    [[ -x $DEB_CARGO && -x $DEB_RUSTC && -x $DEB_RUSTDOC && -x $DEB_CLIPPY ]] || return 0
    [[ -d /usr/lib/rustlib/$TARGET/lib ]] || return 0
    command -v aarch64-linux-gnu-gcc >/dev/null || return 0
    command -v qemu-aarch64 >/dev/null || return 0
    [[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ]] || return 0     # link time
    [[ -e /lib/ld-linux-aarch64.so.1 && -e /lib/aarch64-linux-gnu/libc.so.6 ]] || return 0 # run time
    # Debian's rustc, clippy and the arm64 std must be the same version.
    same_versions rustc-web libstd-rust-web-dev:arm64 rust-web-clippy || return 0
    return 1
}

step "toolchain"
ensure_packages PICA_A64_SKIP_INSTALL "${PACKAGES[@]}"
echo "$($DEB_RUSTC --version), $($DEB_CARGO --version), $($DEB_CLIPPY --version)"
echo "$(qemu-aarch64 --version | head -n 1)"
echo "$(aarch64-linux-gnu-gcc --version | head -n 1)"
echo "install done at $(elapsed)"

# ---------------------------------------------------------------------------
# 2. Environment for cross building and running under qemu
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export PICA_DIFF_CASES=${PICA_DIFF_CASES:-2500}
export PICA_WIDE_CASES=${PICA_WIDE_CASES:-200}
export PICA_WIDE_SAMPLE=${PICA_WIDE_SAMPLE:-16}
export PICA_CLI_STRIDE=${PICA_CLI_STRIDE:-8}
export RUSTC=$DEB_RUSTC
export RUSTDOC=$DEB_RUSTDOC
# The rustup toolchain's wrappers must not leak into Debian's cargo.
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_TARGET || true
export CARGO_TARGET_DIR=${PICA_A64_TARGET_DIR:-$ROOT/target/aarch64}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
# qemu-aarch64, through this script's runner mode (see the top of the file).
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$ROOT/scripts/test-aarch64.sh --qemu-runner"

cargo_a64() {
    local sub=$1
    shift
    echo "+ cargo $sub --target $TARGET $*"
    "$DEB_CARGO" "$sub" --target "$TARGET" "$@"
}

# ---------------------------------------------------------------------------
# 3. Build, then the whole suite (lib unit tests, every [[test]], bins, doctests)
step "build (cargo test --no-run)"
cargo_a64 test --no-run
echo "build done at $(elapsed)"

status=0
if [[ $# == 0 ]]; then
    # Debian's cargo-clippy, called directly: `cargo clippy` would find
    # rustup's cargo-clippy in $CARGO_HOME/bin first. It runs $CARGO and its
    # sibling clippy-driver (the same rustc version).
    step "clippy for $TARGET (AArch64-only code included)"
    echo "+ cargo-clippy clippy --target $TARGET --workspace --all-targets -- -D warnings"
    CARGO=$DEB_CARGO "$DEB_CLIPPY" clippy --target "$TARGET" --workspace --all-targets \
        -- -D warnings || status=$?
    echo "clippy done at $(elapsed)"
fi

step "cargo test (unit tests, jit-tests, doctests) under qemu-aarch64"
cargo_a64 test --no-fail-fast "$@" || status=$?

if [[ $# == 0 ]]; then
    step "differential fuzz corpus replay on the AArch64 JIT (skipped when fuzz/corpus/diff_interp_jit is absent)"
    cargo_a64 test --lib --no-fail-fast jit::a64::tests::fuzz_corpus_replays_on_every_engine \
        -- --ignored --nocapture || status=$?
fi

echo
echo "== [aarch64] total time $(elapsed), exit status $status"
exit "$status"
