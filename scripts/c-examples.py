#!/usr/bin/env python3
"""Runs the C and C++ examples and `pica-jit run` on the same shaders, uniforms
and vertices, and fails unless all three print the same bits.

    c-examples.py CLI C_BINARY CPP_BINARY WORKDIR [SHBIN ...]

`-` as SHBIN is the embedded default shader. Every DVLE of every SHBIN runs.
"""
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

TIMEOUT = 120  # seconds per child process: a hang fails, never blocks CI


class Rng:
    """xorshift64*, deterministic across hosts."""

    def __init__(self, seed):
        self.state = (seed ^ 0x9E3779B97F4A7C15) | 1

    def next(self):
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 27
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def float_bits(self):
        r = self.next()
        special = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00000001, 0x3F800000]
        if r % 16 == 0:
            return special[(r >> 8) % len(special)]
        value = ((r >> 16) % 20001 - 10000) / 2500.0  # ordinary numbers in [-4, 4]
        return struct.unpack("<I", struct.pack("<f", value))[0]


def make_input(seed, vertices=8):
    rng = Rng(seed)
    lines, cli = [], {"uniforms": {"f": {}, "b": {}}, "vertices": []}
    for reg in range(0, 96, 5):  # every fifth float uniform, over the DVLE's constants
        bits = [rng.float_bits() for _ in range(4)]
        lines.append("f %d %s" % (reg, " ".join("%08x" % b for b in bits)))
        cli["uniforms"]["f"][str(reg)] = ["%08x" % b for b in bits]
    for reg in range(16):
        value = rng.next() % 2
        lines.append("b %d %d" % (reg, value))
        cli["uniforms"]["b"][str(reg)] = bool(value)
    for _ in range(vertices):
        lines.append("vertex")
        vertex = {}
        for reg in range(8):
            bits = [rng.float_bits() for _ in range(4)]
            lines.append("v %d %s" % (reg, " ".join("%08x" % b for b in bits)))
            vertex[str(reg)] = ["%08x" % b for b in bits]
        cli["vertices"].append(vertex)
    return "\n".join(lines) + "\n", json.dumps(cli)


def registers(regs):
    return ["o%d %s" % (r, " ".join(regs[r])) for r in range(16)]


def expected_from_cli(cli_json):
    out = json.loads(cli_json)
    lines, counts = [], {"end": 0, "end_of_code": 0, "budget": 0, "break_outside_loop": 0}
    emit = 0
    for result in out["results"]:
        for e in result["emits"]:
            lines.append("emit %d id=%d primitive=%d winding=%d" % (emit, e["vertex_id"], e["primitive"], e["winding"]))
            lines += registers(e["o"])
            emit += 1
    for n, result in enumerate(out["results"]):
        lines.append("vertex %d" % n)
        lines += registers(result["o"])
        counts[result["stop"]] += 1
    lines.append("summary vertices=%d end=%d end_of_code=%d budget=%d break=%d" % (
        len(out["results"]), counts["end"], counts["end_of_code"], counts["budget"], counts["break_outside_loop"]))
    return "\n".join(lines) + "\n", out["engine"]


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    if done.returncode != 0:
        sys.exit("FAILED: %s exited %d:\n%s" % (" ".join(args), done.returncode, done.stderr))
    return done.stdout


def dvle_count(cli, shbin):
    listing = run([cli, "disasm"] + ([] if shbin == "-" else [shbin]))
    return sum(1 for line in listing.splitlines() if re.match(r"; DVLE \d+:", line))


def main():
    cli, c_binary, cpp_binary, workdir = sys.argv[1:5]
    shbins = sys.argv[5:] or ["-"]
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    compared = 0
    for s, shbin in enumerate(shbins):
        for dvle in range(dvle_count(cli, shbin)):
            text, cli_input = make_input(seed=1000 * s + dvle)
            (work / "input.txt").write_text(text)
            (work / "input.json").write_text(cli_input)
            file_args = [] if shbin == "-" else [shbin]
            cli_out = run([cli, "run"] + file_args + ["--dvle", str(dvle), "--input", str(work / "input.json")])
            want, engine = expected_from_cli(cli_out)
            name = "default shader" if shbin == "-" else Path(shbin).name
            # The C program on the interpreter too: the engines agree bit for bit.
            runs = (("C", [c_binary]), ("C (interpreter)", [c_binary]), ("C++", [cpp_binary]))
            for label, binary in runs:
                extra = ["interp"] if "interpreter" in label else []
                got = run(binary + [shbin, str(dvle), str(work / "input.txt")] + extra)
                if got != want:
                    (work / "want.txt").write_text(want)
                    (work / "got.txt").write_text(got)
                    sys.exit("FAILED: %s example differs from the CLI on %s DVLE %d (see %s/want.txt, got.txt)"
                             % (label, name, dvle, work))
                compared += 1
            print("ok: %s DVLE %d: C (auto and interpreter) and C++ match the CLI (%s engine), %d lines" % (name, dvle, engine, want.count("\n")))
    print("%d passed, 0 failed" % compared)


if __name__ == "__main__":
    main()
