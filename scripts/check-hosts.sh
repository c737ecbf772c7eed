#!/usr/bin/env bash
# Type-checks the workspace's library and binaries (pica-jit with every feature,
# the CLI, the C API) with clippy, warnings as errors, for the hosts CI cannot run: macOS (Apple Silicon
# and Intel), Windows on ARM, Windows x86-64 and Android on AArch64. Nothing is
# linked or run: this proves that every cfg'd path (MAP_JIT memory, the
# Windows-on-ARM cache flush, the AArch64 code generator on non-Linux hosts)
# compiles cleanly there. Windows x86-64 also *runs* under wine:
# scripts/test-windows.sh. Tests and benchmarks are left out: their
# dev-dependencies (criterion's `alloca`) compile C for the target, which needs
# that target's C compiler and SDK; the code under `#[cfg(test)]` runs natively,
# under qemu and under wine instead.
#
# Usage: scripts/check-hosts.sh [TARGET...]   (default: the five below)
#
# Environment:
#   PICA_HOSTS_SKIP_INSTALL=1   never run apt-get (fail if something is missing)
#   PICA_HOSTS_CACHE=DIR        where the targets' standard libraries and builds
#                               are kept between runs (default:
#                               ~/.cache/pica-jit/<rustc version>; CI checks out
#                               afresh, so the cache lives outside the checkout)
#
# Debian's rustc has no standard library for these targets; `-Zbuild-std`
# compiles one from `rust-web-src` (RUSTC_BOOTSTRAP=1 unlocks the unstable flag
# on the stable compiler). That costs ~1-2 minutes per target the first time and
# nothing once cached. Exits non-zero when any target fails.
set -euo pipefail

DEFAULT_TARGETS=(
    aarch64-apple-darwin
    x86_64-apple-darwin
    aarch64-pc-windows-gnullvm
    x86_64-pc-windows-gnu
    aarch64-linux-android
)
DEB_CARGO=/usr/bin/cargo
DEB_RUSTC=/usr/bin/rustc
PACKAGES=(rustc-web cargo-web rust-web-src rust-web-clippy)

cd "$(dirname "$0")/.."
STEP_TAG=hosts
# shellcheck source=scripts/lib/toolchain.sh
source scripts/lib/toolchain.sh

# ---------------------------------------------------------------------------
# 1. Toolchain
missing() {
    [[ -x $DEB_CARGO && -x $DEB_RUSTC && -x /usr/bin/cargo-clippy && -x /usr/bin/clippy-driver ]] || return 0
    [[ -f $($DEB_RUSTC --print sysroot)/lib/rustlib/src/rust/library/Cargo.lock ]] || return 0
    # The standard library's source must match the compiler exactly.
    same_versions rustc-web rust-web-src || return 0
    return 1
}

step "toolchain"
ensure_packages PICA_HOSTS_SKIP_INSTALL "${PACKAGES[@]}"
RUSTC_VERSION=$($DEB_RUSTC --version)
echo "$RUSTC_VERSION, $($DEB_CARGO --version), $(/usr/bin/clippy-driver --version)"

# ---------------------------------------------------------------------------
# 2. Environment: Debian's cargo, rustc and clippy, nothing from rustup
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export RUSTC=$DEB_RUSTC RUSTC_BOOTSTRAP=1
export PATH=/usr/bin:$PATH # cargo finds /usr/bin/cargo-clippy, not rustup's
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_TARGET RUSTFLAGS || true
cache_key=$(echo "$RUSTC_VERSION" | awk '{print "rustc-" $2}')
CACHE=${PICA_HOSTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pica-jit/$cache_key}
export CARGO_TARGET_DIR=$CACHE/check
mkdir -p "$CARGO_TARGET_DIR"
echo "cache: $CARGO_TARGET_DIR"

# ---------------------------------------------------------------------------
# 3. One target at a time (each builds its own std the first time)
# A false positive: on x86_64-pc-windows-gnu and aarch64-linux-android clippy
# 0.1.96 flags every `thread_local!` as `missing_const_for_thread_local`
# although each initializer already is `const { .. }` (not seen for the macOS
# targets, Windows on ARM, nor natively).
CLIPPY_ALLOW=(-A clippy::missing_const_for_thread_local)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${DEFAULT_TARGETS[@]}")
status=0
failed=()
for target in "${targets[@]}"; do
    step "clippy --target $target (-D warnings)"
    t0=$(date +%s)
    if nice "$DEB_CARGO" clippy -Zbuild-std=std,panic_abort --target "$target" \
        --workspace --lib --bins --all-features -- -D warnings "${CLIPPY_ALLOW[@]}"; then
        echo "$target: clean in $(($(date +%s) - t0))s"
    else
        status=1
        failed+=("$target")
    fi
done

echo
if [[ $status == 0 ]]; then
    echo "== [hosts] ${#targets[@]} targets clean, total time $(elapsed)"
else
    echo "== [hosts] FAILED: ${failed[*]} (total time $(elapsed))"
fi
exit "$status"
