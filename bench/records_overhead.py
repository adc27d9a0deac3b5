#!/usr/bin/env python3
"""Cost of per-event records (`lathist runq --slower-than`), against `lathist runq` without
records measured in the same run.

Conditions, interleaved over ROUNDS rounds (a b c d a b c d ...):
  none          lathist runq (no ring buffer records)
  high          --slower-than 1000s: every event checked against the threshold, none recorded
  batched       --slower-than 0 --events FILE: a record per wait, submitted with
                BPF_RB_NO_WAKEUP until a quarter of the ring buffer waits (the default)
  kernel        the same with LATHIST_TEST=kernel-wakeup: the kernel's own choice (wake when
                the consumer has caught up)
Load: `taskset -c 1 perf bench sched pipe -l LOOPS` (~2 x LOOPS switches). Printed:
  - ns per run of the sched_switch and sched_wakeup programs (run_time_ns / run_cnt,
    kernel.bpf_stats_enabled=1, which adds ~60 ns to every run in every condition);
  - the benchmark's time, as a ratio to `none`;
  - the loader's CPU time (from /proc/PID/schedstat) per record and as a share of one
    CPU, the record rate, and records delivered / dropped.
Medians over rounds. Environment: LOOPS (200000), ROUNDS (5). Needs root and perf.
"""
import json
import os
import statistics
import sys
import tempfile
import time

from benchlib import (LATHIST, LOOPS, BpfStats, Tracer, ns_per_run, pipe_bench, prog_runs,
                      schedstat_ns)

ROUNDS = int(os.environ.get("ROUNDS", "5"))


def one(args, tmp, test=None):
    events = os.path.join(tmp, "events.json")
    doc = os.path.join(tmp, "doc.json")
    for f in (events, doc):
        if os.path.exists(f):
            os.unlink(f)
    cmd = [LATHIST, "runq", "-f", "json", "-o", doc, *args]
    if "--slower-than" in args:
        cmd += ["--events", events]
    with Tracer(cmd, "Tracing", env=dict(os.environ, LATHIST_TEST=test) if test else None) as t:
        before = prog_runs()
        s0, w0 = schedstat_ns(t.p.pid), time.monotonic()
        secs, _ = pipe_bench(loops=LOOPS)
        s1, w1 = schedstat_ns(t.p.pid), time.monotonic()
        after = prog_runs()
    with open(doc) as f:
        d = json.load(f)
    rec = d.get("records", {"delivered": 0, "dropped": 0})
    return {
        "switch_ns": ns_per_run(before, after, "switch"),
        "wakeup_ns": ns_per_run(before, after, "wakeup"),
        "secs": secs,
        "loader_s": (s1 - s0) / 1e9,
        "wall_s": w1 - w0,
        "delivered": rec["delivered"],
        "dropped": rec["dropped"],
    }


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    conditions = {
        "none": ([], None),
        "high (--slower-than 1000s)": (["--slower-than", "1000s"], None),
        "batched (--slower-than 0)": (["--slower-than", "0"], None),
        "kernel wakeups": (["--slower-than", "0"], "kernel-wakeup"),
    }
    res = {name: [] for name in conditions}
    with BpfStats(), tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        for rnd in range(ROUNDS):
            for name, (args, test) in conditions.items():
                res[name].append(one(args, tmp, test))
            print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)

    def med(name, key):
        return statistics.median(r[key] for r in res[name])

    print(f"lathist runq --slower-than overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}; taskset -c 1 perf bench sched pipe -l {LOOPS}, "
          f"{ROUNDS} rounds, medians; kernel.bpf_stats_enabled=1 throughout")
    base_sw, base_t = med("none", "switch_ns"), med("none", "secs")
    print(f"  {'condition':26} {'switch ns':>9} {'x none':>7} {'wakeup ns':>9} {'bench x':>8} "
          f"{'records/s':>10} {'dropped':>8} {'loader CPU':>10} {'ns/record':>9}")
    for name in conditions:
        sw, wk = med(name, "switch_ns"), med(name, "wakeup_ns")
        rate = statistics.median(r["delivered"] / r["wall_s"] for r in res[name])
        drop = statistics.median(r["dropped"] / max(1, r["dropped"] + r["delivered"])
                                 for r in res[name])
        cpu = statistics.median(r["loader_s"] / r["wall_s"] for r in res[name])
        per = statistics.median(r["loader_s"] * 1e9 / r["delivered"] if r["delivered"]
                                else float("nan") for r in res[name])
        print(f"  {name:26} {sw:9.0f} {sw / base_sw:6.2f}x {wk:9.0f} "
              f"{med(name, 'secs') / base_t:7.2f}x {rate:10.0f} {100 * drop:7.2f}% "
              f"{100 * cpu:9.1f}% {per:9.0f}")


if __name__ == "__main__":
    main()
