#!/usr/bin/env bash
# Builds the library's unit tests and every jit-tests suite for
# x86_64-pc-windows-gnu and runs them under wine, so the Windows x86-64 JIT
# (VirtualProtect through memmap2, generated sysv64 code called from and calling
# back into Windows-ABI Rust, the CLI's paths) is tested, not assumed.
#
# Usage: scripts/test-windows.sh [cargo test args, e.g. --test wide]
#   With no arguments: the library's and the CLI's unit tests and the suites
#   that run generated code (WINDOWS_SUITES below). Left out for time: the
#   assembler/disassembler suites (no generated code, and their many small file
#   reads are slow through wine: asm_robustness took over 9 minutes) and `cli`
#   (it starts the CLI for every case, seconds each under wine); run them with
#   `--test cli`, or everything with `--tests`.
#
# Environment:
#   PICA_WIN_SKIP_INSTALL=1   never run apt-get (fail if something is missing)
#   PICA_HOSTS_CACHE=DIR      where the Windows standard library, the builds and
#                             the wine prefix are kept between runs (default:
#                             ~/.cache/pica-jit/<rustc version>, outside the
#                             checkout: CI checks out afresh)
#   PICA_WIN_TIMEOUT=SECONDS  limit for each test executable (default 2400: the
#                             differential suite needed more than 1200 on a
#                             2-core machine at load average 16)
#   PICA_DIFF_CASES, PICA_WIDE_CASES, PICA_WIDE_SAMPLE  random-program counts
#                             (defaults here: 1000, 200, 16; natively the suites
#                             run their full defaults)
#
# It installs what is missing (Debian packages, idempotent: apt is skipped when
# everything is present). Debian ships no Windows standard library, so it is
# built from `rust-web-src` with `-Zbuild-std` (RUSTC_BOOTSTRAP=1 unlocks the
# flag on the stable compiler) and linked by mingw-w64. Wine 8 lacks
# bcryptprimitives.dll, whose ProcessPrng the standard library imports for its
# random seeds: the script builds a stand-in DLL (ProcessPrng on top of
# RtlGenRandom) and puts it beside every test executable. Exits non-zero when
# anything fails.
set -euo pipefail

TARGET=x86_64-pc-windows-gnu
WINE=/usr/lib/wine/wine64
MINGW_CC=x86_64-w64-mingw32-gcc
SHIM=bcryptprimitives.dll
WINDOWS_SUITES=(differential corpus_engines wide panic_safety fp_environment
    honest_engines rust_calls control_flow batch)

# Runner mode (cargo calls `test-windows.sh --wine-runner EXE ARGS...` for every
# test executable): the stand-in DLL goes beside the executable and beside the
# CLI (`pica-jit.exe`, one directory up from deps/, which the CLI tests spawn),
# then the executable runs under wine with a time limit.
if [[ ${1:-} == --wine-runner ]]; then
    shift
    exe=$1
    dir=$(dirname "$exe")
    for d in "$dir" "$(dirname "$dir")"; do
        [[ -f $d/$SHIM ]] || cp "$PICA_WIN_SHIM" "$d/$SHIM"
    done
    exec timeout -k 10 "${PICA_WIN_TIMEOUT:-2400}" "$WINE" "$@"
fi

cd "$(dirname "$0")/.."
DEB_CARGO=/usr/bin/cargo
DEB_RUSTC=/usr/bin/rustc
PACKAGES=(rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64)

STEP_TAG=windows
# shellcheck source=scripts/lib/toolchain.sh
source scripts/lib/toolchain.sh

# ---------------------------------------------------------------------------
# 1. Toolchain and wine
missing() {
    [[ -x $DEB_CARGO && -x $DEB_RUSTC && -x $WINE ]] || return 0
    command -v "$MINGW_CC" >/dev/null || return 0
    [[ -f $($DEB_RUSTC --print sysroot)/lib/rustlib/src/rust/library/Cargo.lock ]] || return 0
    same_versions rustc-web rust-web-src || return 0
    return 1
}

step "toolchain"
ensure_packages PICA_WIN_SKIP_INSTALL "${PACKAGES[@]}"
RUSTC_VERSION=$($DEB_RUSTC --version)
echo "$RUSTC_VERSION, $($DEB_CARGO --version)"
echo "$($MINGW_CC --version | head -n 1)"
echo "$($WINE --version)"

# ---------------------------------------------------------------------------
# 2. Environment: Debian's cargo and rustc, cache outside the checkout, wine
#    with its own quiet prefix (no display, no Mono/Gecko installers)
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# The point is the JIT: a suite that quietly ran the interpreter fails.
export PICA_REQUIRE_JIT=${PICA_REQUIRE_JIT:-1}
# The random-program counts are the Linux suites' business (they run them at full
# size natively); under wine the point is the Windows ABI, memory and paths, so
# the counts are cut as under qemu and CI stays within its time budget.
export PICA_DIFF_CASES=${PICA_DIFF_CASES:-1000}
export PICA_WIDE_CASES=${PICA_WIDE_CASES:-200}
export PICA_WIDE_SAMPLE=${PICA_WIDE_SAMPLE:-16}
export RUSTC=$DEB_RUSTC RUSTC_BOOTSTRAP=1
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_TARGET RUSTFLAGS || true
cache_key=$(echo "$RUSTC_VERSION" | awk '{print "rustc-" $2}')
CACHE=${PICA_HOSTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pica-jit/$cache_key}
export CARGO_TARGET_DIR=$CACHE/$TARGET
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=$MINGW_CC
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$(pwd)/scripts/test-windows.sh --wine-runner"
export WINEPREFIX=$CACHE/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export WINEARCH=win64
unset DISPLAY WAYLAND_DISPLAY || true
mkdir -p "$CARGO_TARGET_DIR"
echo "cache: $CACHE"

# ---------------------------------------------------------------------------
# 3. The stand-in bcryptprimitives.dll
step "bcryptprimitives.dll stand-in (ProcessPrng over RtlGenRandom)"
shim_dir=$CACHE/shim
mkdir -p "$shim_dir"
cat >"$shim_dir/bcryptprimitives.c" <<'C'
/* Wine 8 has no bcryptprimitives.dll; Rust's standard library imports
 * ProcessPrng from it to seed its hash maps. RtlGenRandom (advapi32's
 * SystemFunction036) draws from the same system generator, in chunks because
 * it takes a 32-bit length. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
C
if [[ ! -f $shim_dir/$SHIM || $shim_dir/bcryptprimitives.c -nt $shim_dir/$SHIM ]]; then
    "$MINGW_CC" -O2 -shared -o "$shim_dir/$SHIM" "$shim_dir/bcryptprimitives.c" -ladvapi32
fi
export PICA_WIN_SHIM=$shim_dir/$SHIM
echo "built $PICA_WIN_SHIM"

step "wine prefix"
if [[ ! -f $WINEPREFIX/system.reg ]]; then
    timeout 300 "$WINE" wineboot --init
fi
echo "prefix ready at $(elapsed)"

# One wineserver for the whole run. Left to itself, wine starts a server per
# test executable and that server exits a few seconds after its last client; an
# executable that starts while the previous server is shutting down loses its
# connection ("wine client error:0: recvmsg: Connection reset by peer") and
# the suite fails for no fault of its own. A persistent server (-p) never
# shuts down on its own; it is killed when this script exits.
WINESERVER=$(dirname "$WINE")/wineserver
timeout 60 "$WINESERVER" -w 2>/dev/null || true
"$WINESERVER" -p
trap 'timeout 60 "$WINESERVER" -k 2>/dev/null || true' EXIT
echo "persistent wineserver started"

cargo_win() {
    local sub=$1
    shift
    echo "+ cargo $sub -Zbuild-std --target $TARGET $*"
    nice "$DEB_CARGO" "$sub" -Zbuild-std --target "$TARGET" "$@"
}

# ---------------------------------------------------------------------------
# 4. Build, then run under wine
args=("$@")
if [[ ${#args[@]} == 0 ]]; then
    args=(--lib --bins)
    for suite in "${WINDOWS_SUITES[@]}"; do args+=(--test "$suite"); done
fi
step "build (cargo test --no-run)"
cargo_win test --no-run "${args[@]}"
echo "build done at $(elapsed)"

status=0
step "cargo test ${args[*]} under wine (PICA_REQUIRE_JIT=${PICA_REQUIRE_JIT:-unset})"
cargo_win test --no-fail-fast "${args[@]}" || status=$?

echo
echo "== [windows] total time $(elapsed), exit status $status"
exit "$status"
