#!/usr/bin/env python3
"""Cost of per-event records (`lathist runq --slower-than`, `lathist bio --slower-than`),
against `lathist runq` without records measured in the same run.

runq conditions, interleaved over ROUNDS rounds (a b c d e a b c d e ...):
  none          lathist runq (no ring buffer records)
  high          --slower-than 1000s: every event checked against the threshold, none recorded
  batched       --slower-than 0 --events FILE: a record per wait as a JSON line, submitted with
                BPF_RB_NO_WAKEUP until a quarter of the ring buffer waits (the default)
  text          --slower-than 0 without --events: a text line per wait (on stderr, as the
                report goes to -o; stderr is a file)
  kernel        batched with LATHIST_TEST=kernel-wakeup: the kernel's own choice (wake when
                the consumer has caught up)
Load: `taskset -c 1 perf bench sched pipe -l LOOPS` (~2 x LOOPS switches). Printed:
  - ns per run of the sched_switch and sched_wakeup programs (run_time_ns / run_cnt,
    kernel.bpf_stats_enabled=1, which adds ~60 ns to every run in every condition);
  - the benchmark's time, as a ratio to `none`;
  - the loader's CPU time (from /proc/PID/schedstat) per record and as a share of one
    CPU, the record rate, and records delivered / dropped.
Then bio: `lathist bio --disk LOOP --slower-than 0`, JSON lines (--events) and text lines,
under fio 4 KiB O_DIRECT random reads (psync, queue depth 1) on a loop device for SECONDS:
the record rate and the loader's CPU time per record.

With BASE=PATH (another build's lathist), each record condition also runs with that binary
right after this one in every round, in rows marked "(BASE)": the two builds side by side
under the same noise.

Medians over rounds, with min-max of the loader's ns per record. Files in /dev/shm.
Environment: LOOPS (200000), ROUNDS (5), SECONDS (3), BASE. Needs root, perf, fio, losetup.
"""
import json
import os
import statistics
import sys
import tempfile
import time

from benchlib import (LATHIST, LOOPS, BpfStats, Tracer, fio, loop_device, ns_per_run,
                      pipe_bench, prog_runs, schedstat_ns)

ROUNDS = int(os.environ.get("ROUNDS", "5"))
SECONDS = int(os.environ.get("SECONDS", "3"))
BASE = os.environ.get("BASE")


def traced(binary, tool, args, tmp, fmt, test=None):
    """The tracer of one condition: records as JSON lines (--events) or text lines (on
    stderr, into a file), or none (fmt None)."""
    events, doc, err = (os.path.join(tmp, n) for n in ("events.json", "doc.json", "err.txt"))
    for f in (events, doc, err):
        if os.path.exists(f):
            os.unlink(f)
    cmd = [binary, tool, "-f", "json", "-o", doc, *args]
    if fmt == "json":
        cmd += ["--events", events]
    env = dict(os.environ, LATHIST_TEST=test) if test else None
    return Tracer(cmd, "Tracing", env=env, stderr_path=err if fmt == "text" else None), doc


def records(doc):
    with open(doc) as f:
        d = json.load(f)
    return d.get("records", {"delivered": 0, "dropped": 0})


def one(binary, args, tmp, fmt, test=None):
    tracer, doc = traced(binary, "runq", args, tmp, fmt, test)
    with tracer as t:
        before = prog_runs()
        s0, w0 = schedstat_ns(t.p.pid), time.monotonic()
        secs, _ = pipe_bench(loops=LOOPS)
        s1, w1 = schedstat_ns(t.p.pid), time.monotonic()
        after = prog_runs()
    rec = records(doc)
    return {
        "switch_ns": ns_per_run(before, after, "switch"),
        "wakeup_ns": ns_per_run(before, after, "wakeup"),
        "secs": secs,
        "loader_s": (s1 - s0) / 1e9,
        "wall_s": w1 - w0,
        "delivered": rec["delivered"],
        "dropped": rec["dropped"],
    }


def one_bio(binary, disk, dev, tmp, fmt):
    tracer, doc = traced(binary, "bio", ["--disk", disk, "--slower-than", "0"], tmp, fmt)
    with tracer as t:
        s0, w0 = schedstat_ns(t.p.pid), time.monotonic()
        fio(dev, SECONDS)
        s1, w1 = schedstat_ns(t.p.pid), time.monotonic()
    rec = records(doc)
    return {"loader_s": (s1 - s0) / 1e9, "wall_s": w1 - w0, "delivered": rec["delivered"],
            "dropped": rec["dropped"]}


def per_record(rows):
    return [r["loader_s"] * 1e9 / r["delivered"] if r["delivered"] else float("nan")
            for r in rows]


def spread(v):
    """median and min-max of the ns per record, blank without records"""
    v = [x for x in v if x == x]
    return f"{statistics.median(v):9.0f} {min(v):6.0f}-{max(v):<6.0f}" if v else ""


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    runq = {
        "none": ([], None, None),
        "high (--slower-than 1000s)": (["--slower-than", "1000s"], None, None),
        "batched (--slower-than 0)": (["--slower-than", "0"], "json", None),
        "text lines (--slower-than 0)": (["--slower-than", "0"], "text", None),
        "kernel wakeups": (["--slower-than", "0"], "json", "kernel-wakeup"),
    }
    builds = [("", LATHIST)] + ([(" (BASE)", BASE)] if BASE else [])
    names = [(n, b) for n, (_, fmt, _) in runq.items() for b in (builds if fmt else builds[:1])]
    bio_names = [(f"bio {fmt}", fmt, b) for fmt in ("json", "text") for b in builds]
    res = {n + b[0]: [] for n, b in names}
    bio = {n + b[0]: [] for n, _, b in bio_names}
    dev, cleanup = loop_device()
    try:
        with BpfStats(), tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
            fio(dev, 1)	# warm the backing file's page cache
            for rnd in range(ROUNDS):
                for name, (label, binary) in names:
                    args, fmt, test = runq[name]
                    res[name + label].append(one(binary, args, tmp, fmt, test))
                for name, fmt, (label, binary) in bio_names:
                    bio[name + label].append(one_bio(binary, os.path.basename(dev), dev, tmp,
                                                     fmt))
                print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
    finally:
        cleanup()

    def med(name, key):
        return statistics.median(r[key] for r in res[name])

    print(f"lathist --slower-than overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}; taskset -c 1 perf bench sched pipe -l {LOOPS}, "
          f"{ROUNDS} rounds, medians; kernel.bpf_stats_enabled=1 throughout"
          + (f"; BASE {BASE}" if BASE else ""))
    base_sw, base_t = med("none", "switch_ns"), med("none", "secs")
    print(f"  {'condition':36} {'switch ns':>9} {'x none':>7} {'wakeup ns':>9} {'bench x':>8} "
          f"{'records/s':>10} {'dropped':>8} {'loader CPU':>10} {'ns/record':>9} {'min-max':>13}")
    for name in res:
        sw, wk = med(name, "switch_ns"), med(name, "wakeup_ns")
        rate = statistics.median(r["delivered"] / r["wall_s"] for r in res[name])
        drop = statistics.median(r["dropped"] / max(1, r["dropped"] + r["delivered"])
                                 for r in res[name])
        cpu = statistics.median(r["loader_s"] / r["wall_s"] for r in res[name])
        print(f"  {name:36} {sw:9.0f} {sw / base_sw:6.2f}x {wk:9.0f} "
              f"{med(name, 'secs') / base_t:7.2f}x {rate:10.0f} {100 * drop:7.2f}% "
              f"{100 * cpu:9.1f}% {spread(per_record(res[name]))}")
    print(f"\nbio records: lathist bio --disk LOOP --slower-than 0 under fio 4 KiB O_DIRECT "
          f"randread (psync) on a loop device, {SECONDS} s, {ROUNDS} rounds, medians")
    print(f"  {'condition':36} {'records/s':>10} {'dropped':>8} {'loader CPU':>10} "
          f"{'ns/record':>9} {'min-max':>13}")
    for name, rows in bio.items():
        rate = statistics.median(r["delivered"] / r["wall_s"] for r in rows)
        drop = statistics.median(r["dropped"] / max(1, r["dropped"] + r["delivered"])
                                 for r in rows)
        cpu = statistics.median(r["loader_s"] / r["wall_s"] for r in rows)
        print(f"  {name:36} {rate:10.0f} {100 * drop:7.2f}% {100 * cpu:9.1f}% "
              f"{spread(per_record(rows))}")


if __name__ == "__main__":
    main()
