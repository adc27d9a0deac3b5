#!/usr/bin/env python3
"""Hot-path cost of `lathist runq` against a baseline build, interleaved in one run.

  bench/runq_compare.py BASE_LATHIST [ATTACH...]

BASE_LATHIST is another build of lathist (`make bench-compare BASE=<git rev>` builds one
in build/base and runs this). For each attach type (default: tp_btf raw_tp),
ROUNDS rounds alternate base and current (base first in odd rounds, current first in even
ones) and measure, for each:

1. Program time: run_time_ns / run_cnt of the sched_switch and sched_wakeup programs
   (kernel.bpf_stats_enabled=1, which itself adds ~60 ns per run) over
   `taskset -c 1 perf bench sched pipe -l LOOPS`, and the run time of all of runq's programs
   per context switch the kernel made meanwhile (/proc/stat ctxt): what the programs add to
   each switch.
2. End to end: the same bench with stats off, paired with a baseline run without any
   tracer right before it: added ns per context switch (noisy here: ~3x between runs).

Prints medians of each build and the median of the per-round ratios current / base with
their interquartile range (end to end: the per-round difference current - base, in ns) (a round runs both builds back to back, so the ratio of one round
is less exposed to the machine's drift than the ratio of the medians).
Environment: LOOPS (200000), ROUNDS (7). Needs root and perf.
"""
import math
import os
import statistics
import sys
import time

from benchlib import (LATHIST, LOOPS, ROUNDS, BpfStats, Tracer, ns_per_run, pipe_bench,
                      prog_runs)


def program_time(binary, attach):
    """ns per run of the switch and wakeup programs of one lathist over one bench, and the
    ns all of its programs took per context switch."""
    with BpfStats():
        with Tracer([binary, "runq", "--attach", attach], "Tracing"):
            before = prog_runs()
            _, switches = pipe_bench()
            after = prog_runs()
    total = sum(after[n][1] - before.get(n, (0, 0))[1] for n in after)
    return (ns_per_run(before, after, "switch"), ns_per_run(before, after, "wakeup"),
            total / switches if switches else float("nan"))


def added_per_switch(binary, attach):
    """ns added per context switch: a bench with the tracer minus one right before without."""
    t0, n0 = pipe_bench()
    with Tracer([binary, "runq", "--attach", attach], "Tracing"):
        t1, _ = pipe_bench()
    return (t1 - t0) * 1e9 / n0


def main():
    if os.geteuid() != 0 or len(sys.argv) < 2:
        sys.exit("usage (as root): bench/runq_compare.py BASE_LATHIST [ATTACH...]")
    base = os.path.abspath(sys.argv[1])
    types = sys.argv[2:] or ["tp_btf", "raw_tp"]
    builds = {"base": base, "current": LATHIST}
    print(f"lathist runq hot path, base {base} vs current {LATHIST}, on {os.uname().release}, "
          f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}; {ROUNDS} rounds interleaved, "
          f"taskset -c 1 perf bench sched pipe -l {LOOPS}, medians")
    print(f"  {'attach':11} {'measure':34} {'base':>7} {'current':>8} "
          f"{'current/base per round: median (IQR)':>38}")
    for attach in types:
        got = {b: {"switch": [], "wakeup": [], "per_switch": [], "e2e": []} for b in builds}
        for rnd in range(ROUNDS):
            order = list(builds) if rnd % 2 == 0 else list(reversed(builds))
            for b in order:
                sw, wk, per = program_time(builds[b], attach)
                got[b]["switch"].append(sw)
                got[b]["wakeup"].append(wk)
                got[b]["per_switch"].append(per)
            for b in order:
                got[b]["e2e"].append(added_per_switch(builds[b], attach))
            print(f"  {attach}: round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
        for what, label in (("switch", "sched_switch ns/run"), ("wakeup", "sched_wakeup ns/run"),
                            ("per_switch", "all programs, ns per context switch"),
                            ("e2e", "added ns/switch (end to end)")):
            pairs = [(x, y) for x, y in zip(got["current"][what], got["base"][what])
                     if not (math.isnan(x) or math.isnan(y))]
            b = statistics.median(y for _, y in pairs) if pairs else float("nan")
            c = statistics.median(x for x, _ in pairs) if pairs else float("nan")
            if what == "e2e":
                # differences of two baseline-subtracted times: near 0 or below 0 at
                # times, so no ratio; the per-round difference current - base instead
                d = sorted(x - y for x, y in pairs)
                q = statistics.quantiles(d, n=4) if len(d) > 1 else d * 3
                print(f"  {attach:11} {label:34} {b:7.0f} {c:8.0f} "
                      f"{statistics.median(d):+17.0f} ns ({q[0]:+.0f}..{q[2]:+.0f})")
                continue
            ratios = sorted(x / y for x, y in pairs if y > 0)
            q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            print(f"  {attach:11} {label:34} {b:7.0f} {c:8.0f} "
                  f"{statistics.median(ratios):20.3f}x ({q[0]:.3f}-{q[2]:.3f})")


if __name__ == "__main__":
    main()
