#!/usr/bin/env python3
"""Overhead of `lathist runq` on this machine, measured against baselines in the same run.

1. End-to-end: `taskset -c 1 perf bench sched pipe -l LOOPS` under each condition (no
   tracer, empty tp_btf programs, lathist tp_btf and raw_tp, bpftrace runqlat.bt),
   each run paired with a baseline run right before it, ROUNDS rounds; medians of the
   paired differences, as ns added per context switch and as a ratio to runqlat.bt.
2. Per program: run_time_ns / run_cnt from `bpftool prog show` with
   kernel.bpf_stats_enabled=1 (which itself adds ~60 ns per run), lathist next to
   empty tp_btf programs and runqlat.bt's programs (named sched_*) in the same run.
3. Loader: CPU time of the lathist process while it traces ~100k switches/s
   (from /proc/PID/schedstat), and kernel map memory of the default mode (-v).

Environment: LOOPS (200000), ROUNDS (7). Needs root, perf, bpftrace.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import (EMPTY, LATHIST, LOOPS, ROUNDS, Tracer, ctxt, mount_tracefs, pipe_bench,
                      prog_stats, schedstat_ns)


def runqlat_bt():
    """Debian's runqlat.bt needs kernel headers for one constant; BTF has the rest."""
    src = "/usr/sbin/runqlat.bt"
    text = open(src).read().replace("#include <linux/sched.h>", "#define TASK_RUNNING 0")
    f = tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False)
    f.write(text)
    f.close()
    return f.name


def end_to_end():
    bt = runqlat_bt()
    conditions = {
        "empty tp_btf x3": lambda: Tracer([EMPTY, "sched"], "attached"),
        "lathist runq": lambda: Tracer([LATHIST, "runq"], "Tracing"),
        "lathist runq --attach raw_tp": lambda: Tracer([LATHIST, "runq", "--attach", "raw_tp"],
                                                       "Tracing"),
        "runqlat.bt (bpftrace)": lambda: Tracer(["bpftrace", bt], "Attaching", "stdout", 1.0),
    }
    diffs = {name: [] for name in conditions}
    switches = []
    base_times = []
    for rnd in range(ROUNDS):
        for name, make in conditions.items():
            t0, n0 = pipe_bench()
            with make():
                t1, _ = pipe_bench()
            diffs[name].append(t1 - t0)
            switches.append(n0)
            base_times.append(t0)
        print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
    os.unlink(bt)
    nsw = statistics.median(switches)
    base = statistics.median(base_times)
    print(f"\nEnd to end: taskset -c 1 perf bench sched pipe -l {LOOPS}, {ROUNDS} rounds, "
          f"each condition paired with a baseline run before it")
    print(f"  baseline: median {base:.3f} s, {nsw:.0f} context switches per run "
          f"({base * 1e9 / nsw:.0f} ns per switch)")
    ref = statistics.median(diffs["runqlat.bt (bpftrace)"]) * 1e9 / nsw
    print(f"  {'condition':32} {'added ns/switch':>16} {'added %':>8} {'vs runqlat.bt':>14}")
    for name, d in diffs.items():
        added = statistics.median(d) * 1e9 / nsw
        print(f"  {name:32} {added:16.0f} {100 * statistics.median(d) / base:7.1f}% "
              f"{added / ref if ref > 0 else float('nan'):13.2f}x")


def loader_cpu():
    print("\nLoader CPU while tracing (unpinned perf bench sched pipe):")
    for args in (["runq"], ["runq", "-i", "1"], ["runq", "--per-thread", "-i", "1"]):
        with Tracer([LATHIST, *args], "Tracing") as t:
            c0, s0, w0 = ctxt(), schedstat_ns(t.p.pid), time.monotonic()
            pipe_bench(pinned=False, loops=LOOPS * 2)
            c1, s1, w1 = ctxt(), schedstat_ns(t.p.pid), time.monotonic()
        rate = (c1 - c0) / (w1 - w0)
        print(f"  lathist {' '.join(args):28} {rate / 1000:6.0f}k switches/s, loader "
              f"{100 * (s1 - s0) / 1e9 / (w1 - w0):.3f}% of one CPU")


def map_memory():
    p = subprocess.run([LATHIST, "runq", "-d", "0.2", "-v"], capture_output=True, text=True)
    line = next((l for l in p.stderr.splitlines() if l.startswith("maps:")), "?")
    print(f"\nKernel map memory, default mode ({os.cpu_count()} CPUs), from lathist -v:\n  {line}")


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    mount_tracefs()
    print(f"lathist runq overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}")
    end_to_end()
    bt = runqlat_bt()
    prog_stats([Tracer([EMPTY, "sched"], "attached"), Tracer([LATHIST, "runq"], "Tracing"),
                Tracer(["bpftrace", bt], "Attaching", "stdout", 1.0)],
               lambda: [pipe_bench() for _ in range(3)], ("runq_", "empty_", "sched_"))
    os.unlink(bt)
    loader_cpu()
    map_memory()


if __name__ == "__main__":
    main()
