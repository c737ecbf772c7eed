#!/usr/bin/env bash
# Builds the C API (static and shared library), the C example against the static
# library and the C++ adapter against the shared one with the system cc/c++, and
# checks that both print exactly the bits `pica-jit run` prints, on the embedded
# default shader and on a few ../shared/corpus shaders (skipped, with a note,
# when the corpus is absent; a failure when PICA_REQUIRE_CORPUS=1).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
out="$target/c-examples"
mkdir -p "$out"

cargo build --quiet -p pica-jit-capi
cargo build --quiet --bin pica-jit
lib="$target/debug"

"${CC:-cc}" -std=c99 -Wall -Wextra -Werror -pedantic -O1 -Iinclude examples/c/batch.c \
    "$lib/libpica_jit_capi.a" -lpthread -ldl -lm -o "$out/batch"
"${CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -O1 -Iinclude examples/cpp/engine_adapter.cpp \
    -L"$lib" -lpica_jit_capi -Wl,-rpath,"$(cd "$lib" && pwd)" -o "$out/engine_adapter"

shaders=(-)
corpus=../shared/corpus
# A geometry shader (emits) and vertex shaders with jumps, loops and rcp/rsq.
picks=(
    libretro__RetroArch__gfx_drivers_ctr_shaders_ctr_sprite_shbin.S.shbin
    XanderMK__spookys-3d-mansion__build_vshader.shbin
    DDews__Snakes__build_source_myshader.shbin
)
if [ -d "$corpus" ]; then
    for pick in "${picks[@]}"; do
        if [ -f "$corpus/$pick" ]; then
            shaders+=("$corpus/$pick")
        elif [ "${PICA_REQUIRE_CORPUS:-0}" = 1 ]; then
            echo "FAILED: corpus present but $pick is missing" >&2
            exit 1
        else
            echo "note: $pick not in the corpus; skipping it"
        fi
    done
elif [ "${PICA_REQUIRE_CORPUS:-0}" = 1 ]; then
    echo "FAILED: PICA_REQUIRE_CORPUS=1 but $corpus does not exist" >&2
    exit 1
else
    echo "note: corpus not found at $corpus; comparing on the default shader only"
fi

python3 scripts/c-examples.py "$lib/pica-jit" "$out/batch" "$out/engine_adapter" "$out/work" "${shaders[@]}"
