#!/usr/bin/env bash
# Instructions per vertex executed by the generated code of Azahar's x86-64 shader JIT and
# of pica-jit's single-vertex JIT (f32 and f24), counted by callgrind: the x86-64
# counterpart of ../shared/peer/a64/count.sh, deterministic where compare.sh's times are
# not (a shared VM's speed moves between runs; docs/benchmarks.md). A measurement only:
# not part of CI, and it only runs the peer binaries (never links or copies them).
#
# Usage: scripts/x86-count.sh FILE.shbin... (e.g. ../shared/corpus/*.shbin)
#   Needs valgrind, ../shared/peer/azbench, and pj-bench built by
#   ../shared/peer/pj-bench/build.sh (PJ_BENCH_DIR as for compare.sh).
# Environment: OUT_DIR (default: a temporary directory, removed), AZBENCH, PJBENCH.
#
# Method: Azahar's code is the anonymous mapping callgrind names `???` in object `[???]`;
# azbench runs every vertex DVLE of a file (one pass of warm-up, three timed passes of
# --n vertices), so its count is an average over the file's DVLEs: Ir of the mapping ÷
# calls into it. pica-jit's: pj-bench's count mode (`--count-only N`, `--dvle K`): the
# same mapping's Ir ÷ calls between N = 1000 and N = 0, averaged over the file's vertex
# DVLEs. Files Azahar's JIT cannot run (its code loops until its own limit: ≥ 5,000
# instructions per vertex) are left out of the geomeans, as compare.sh leaves them out.
set -euo pipefail
[ $# -gt 0 ] || { sed -n 2,18p "$0"; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
AZBENCH=${AZBENCH:-$here/../shared/peer/azbench}
PJ_BENCH_DIR=${PJ_BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pica-peer-bench}
PJBENCH=${PJBENCH:-$PJ_BENCH_DIR/target/release/pj-bench}
for tool in valgrind callgrind_annotate python3 "$AZBENCH" "$PJBENCH"; do
    command -v "$tool" >/dev/null || { echo "x86-count.sh: $tool not found" >&2; exit 2; }
done
if [ -z "${OUT_DIR:-}" ]; then
    OUT_DIR=$(mktemp -d)
    trap 'rm -rf "$OUT_DIR"' EXIT
fi
mkdir -p "$OUT_DIR"
cg() {
    local out=$1; shift
    timeout 600 valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$out" "$@" \
        >/dev/null 2>&1 || echo "x86-count.sh: $* failed" >&2
}
n=0
for f in "$@"; do
    n=$((n + 1))
    b=$(basename "$f" .shbin)
    cg "$OUT_DIR/$n.az.cg" "$AZBENCH" --n 500 --min-ms 0 --compile-reps 1 --engines jit "$f"
    for d in $(seq 0 15); do
        # Only vertex DVLEs print a count line (a file has at most 16 DVLEs).
        lines=$("$PJBENCH" --count-only 0 --count-engine pj_jit_f32 --dvle "$d" "$f" 2>/dev/null | grep -c '^count' || true)
        [ "$lines" -gt 0 ] || continue
        for e in pj_jit_f32 pj_jit_f24; do
            cg "$OUT_DIR/$n.$d.$e.0.cg" "$PJBENCH" --count-only 0 --count-engine "$e" --dvle "$d" "$f"
            cg "$OUT_DIR/$n.$d.$e.1.cg" "$PJBENCH" --count-only 1000 --count-engine "$e" --dvle "$d" "$f"
        done
    done
    echo "$n	$b" >> "$OUT_DIR/files.tsv"
done
python3 - "$OUT_DIR" <<'EOF'
import glob, math, re, subprocess, sys
out_dir = sys.argv[1]

def generated(path):
    """(Ir, calls) of the anonymous mappings (generated code) in a callgrind file."""
    text = subprocess.run(['callgrind_annotate', '--threshold=100', '--tree=caller', path],
                          capture_output=True, text=True).stdout
    ir = calls = 0
    for block in text.split('\n\n'):
        lines = block.strip().splitlines()
        star = [l for l in lines if re.match(r'\s*[\d,]+\s+\(.*?\)\s+\*\s', l)]
        if not star or '[???]' not in star[0]:
            continue
        ir += int(re.match(r'\s*([\d,]+)', star[0]).group(1).replace(',', ''))
        for l in lines:
            m = re.match(r'\s*[\d,]+\s+\(.*?\)\s+<\s+.*?\s+\(([\d,]+)x\)', l)
            if m and '[???]' not in l:
                calls += int(m.group(1).replace(',', ''))
    return ir, calls

rows = []
for line in open(f'{out_dir}/files.tsv'):
    n, name = line.rstrip('\n').split('\t')
    ir, calls = generated(f'{out_dir}/{n}.az.cg')
    if calls == 0:
        continue
    az = ir / calls
    pj = {}
    for e in ('pj_jit_f32', 'pj_jit_f24'):
        per = []
        for one in sorted(glob.glob(f'{out_dir}/{n}.*.{e}.1.cg')):
            (i1, c1), (i0, c0) = generated(one), generated(one[:-4] + '0.cg')
            if c1 > c0:
                per.append((i1 - i0) / (c1 - c0))
        if per:
            pj[e] = sum(per) / len(per)
    if len(pj) == 2:
        rows.append((name, az, pj['pj_jit_f32'], pj['pj_jit_f24']))
ok = [r for r in rows if r[1] < 5000]
geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print('| shader | Azahar | pj f32 | ratio | pj f24 | ratio |')
print('|---|---:|---:|---:|---:|---:|')
for name, az, f32, f24 in sorted(rows, key=lambda r: -r[3] / r[1]):
    print(f'| {name} | {az:.1f} | {f32:.1f} | {f32 / az:.2f} | {f24:.1f} | {f24 / az:.2f} |')
if ok:
    print(f'\n{len(ok)} of {len(rows)} files comparable; generated code, instructions per vertex, '
          f'geomean pica-jit ÷ Azahar: f32 {geo([r[2] / r[1] for r in ok]):.2f}, '
          f'f24 {geo([r[3] / r[1] for r in ok]):.2f} (f24 ÷ f32 {geo([r[3] / r[2] for r in ok]):.2f}); '
          f'above Azahar: f32 {sum(r[2] > r[1] for r in ok)}, f24 {sum(r[3] > r[1] for r in ok)}')
EOF
