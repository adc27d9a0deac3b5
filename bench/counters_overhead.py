#!/usr/bin/env python3
"""Cost of `lathist runq --counters`: ns per run of the sched_switch program with no
counters, with the on-CPU slice histogram only (--oncpu), and with 1 and 3 counters,
against `lathist runq` measured in the same run.

Hardware events are missing on this VM kind, so the counters are software events read
through the same bpf_perf_event_read_value path (cpu-clock; cpu-clock, page-faults,
context-switches); on real hardware set COUNTERS1 / COUNTERS3 (e.g. cycles and
cycles,instructions,cache-misses). Load: `taskset -c 1 perf bench sched pipe -l LOOPS`;
conditions interleaved over ROUNDS rounds, medians, kernel.bpf_stats_enabled=1 in all.
Environment: LOOPS (200000), ROUNDS (5), COUNTERS1, COUNTERS3. Needs root and perf.
"""
import os
import statistics
import sys
import time

from benchlib import LATHIST, LOOPS, BpfStats, Tracer, ns_per_run, pipe_bench, prog_runs

ROUNDS = int(os.environ.get("ROUNDS", "5"))
C1 = os.environ.get("COUNTERS1", "cpu-clock")
C3 = os.environ.get("COUNTERS3", "cpu-clock,page-faults,context-switches")


def one(args):
    with Tracer([LATHIST, "runq", *args], "Tracing"):
        before = prog_runs()
        secs, _ = pipe_bench(loops=LOOPS)
        after = prog_runs()
    return ns_per_run(before, after, "switch"), ns_per_run(before, after, "wakeup"), secs


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    conditions = {
        "no counters": [],
        "--oncpu": ["--oncpu"],
        f"--counters {C1}": ["--counters", C1],
        f"--counters {C3}": ["--counters", C3],
    }
    res = {name: [] for name in conditions}
    with BpfStats():
        for rnd in range(ROUNDS):
            for name, args in conditions.items():
                res[name].append(one(args))
            print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
    print(f"lathist runq --counters overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}; taskset -c 1 perf bench sched pipe -l {LOOPS}, "
          f"{ROUNDS} rounds, medians; kernel.bpf_stats_enabled=1 throughout")
    base = statistics.median(r[0] for r in res["no counters"])
    base_t = statistics.median(r[2] for r in res["no counters"])
    print(f"  {'condition':58} {'switch ns':>9} {'x none':>7} {'wakeup ns':>9} {'bench x':>8}")
    for name in conditions:
        sw = statistics.median(r[0] for r in res[name])
        wk = statistics.median(r[1] for r in res[name])
        t = statistics.median(r[2] for r in res[name])
        print(f"  {name:58} {sw:9.0f} {sw / base:6.2f}x {wk:9.0f} {t / base_t:7.2f}x")


if __name__ == "__main__":
    main()
