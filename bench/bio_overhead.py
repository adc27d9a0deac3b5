#!/usr/bin/env python3
"""Overhead of `lathist bio` per I/O, measured against baselines in the same run.

1. End to end: fio 4 KiB O_DIRECT random reads (psync, queue depth 1) on a loop device for
   SECONDS seconds under each condition (no tracer, empty tp_btf programs on the block
   tracepoints, lathist bio, lathist bio --per-process --per-disk --per-op, lathist bio
   --attach raw_tp, a bpftrace biolatency on block tracepoints), each paired with a baseline
   run right before it, ROUNDS rounds; median IOPS loss per condition.
2. Per program: run_time_ns / run_cnt with kernel.bpf_stats_enabled=1, lathist next to
   the empty programs and the bpftrace script's (named block_*).

Environment: ROUNDS (7), SECONDS (4). Needs root, fio, bpftrace, losetup.
"""
import os
import statistics
import sys
import time

import benchlib
from benchlib import EMPTY, LATHIST, ROUNDS, Tracer, loop_device, mount_tracefs, prog_stats

SECONDS = int(os.environ.get("SECONDS", "4"))
HERE = os.path.dirname(os.path.abspath(__file__))


def fio(dev, seconds=SECONDS):
    return benchlib.fio(dev, seconds)["iops"]


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    mount_tracefs()
    dev, cleanup = loop_device()
    try:
        conditions = {
            "empty tp_btf x3": lambda: Tracer([EMPTY, "block"], "attached"),
            "lathist bio": lambda: Tracer([LATHIST, "bio"], "Tracing"),
            "lathist bio --per-process --per-disk --per-op":
                lambda: Tracer([LATHIST, "bio", "--per-process", "--per-disk", "--per-op"],
                               "Tracing"),
            "lathist bio --attach raw_tp": lambda: Tracer([LATHIST, "bio", "--attach", "raw_tp"],
                                                          "Tracing"),
            "bpftrace biolatency (tracepoints)":
                lambda: Tracer(["bpftrace", os.path.join(HERE, "biolatency_tp.bt")], "Attaching",
                               "stdout", 1.0),
        }
        fio(dev, 1)	# warm the backing file's page cache
        loss = {name: [] for name in conditions}
        base = []
        for rnd in range(ROUNDS):
            for name, make in conditions.items():
                b = fio(dev)
                with make():
                    t = fio(dev)
                base.append(b)
                loss[name].append((b - t) / b)
            print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
        print(f"lathist bio overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
              f"{time.strftime('%Y-%m-%d')}")
        print(f"\nEnd to end: fio 4 KiB O_DIRECT randread, psync, on a loop device, {SECONDS} s "
              f"per run, {ROUNDS} rounds, each paired with a baseline run before it")
        med = statistics.median(base)
        print(f"  baseline: median {med:.0f} IOPS ({1e9 / med:.0f} ns per I/O)")
        print(f"  {'condition':46} {'IOPS loss':>9} {'added ns/IO':>12}")
        for name, l in loss.items():
            m = statistics.median(l)
            print(f"  {name:46} {100 * m:8.1f}% {m / (1 - m) * 1e9 / med:12.0f}")
        prog_stats([Tracer([EMPTY, "block"], "attached"), Tracer([LATHIST, "bio"], "Tracing"),
                    Tracer(["bpftrace", os.path.join(HERE, "biolatency_tp.bt")], "Attaching",
                           "stdout", 1.0)],
                   lambda: fio(dev), ("bio_", "empty_", "block_"))
    finally:
        cleanup()


if __name__ == "__main__":
    main()
