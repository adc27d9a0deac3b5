#!/usr/bin/env python3
"""The lathist process's own cost with many keys, against a baseline build in the same run.

  bench/loader_overhead.py BASE_LATHIST

THREADS threads of build/bench/sleepers (10000) each sleep PERIOD_MS (100) in a loop, so
that every one of them has a --per-thread key in every 1 s interval. Under that load each
condition runs DURATION (20) after a SETTLE (3 s) start, and the loader's CPU time over it is
read from /proc/PID/schedstat (field 1, ns on CPU; lathist runq is one thread) and its peak
resident memory from /proc/PID/status (VmHWM):

  text   lathist runq --per-thread -i 1            (text to stdout, into /dev/null)
  json   lathist runq --per-thread -i 1 -f json -o FILE
  total  lathist runq -i 1                          (one histogram pair: the total)

(the --per-thread ones with --max-keys 3 x THREADS: the interval's two halves share the map,
so the default 10240 would fill up at 10,000 threads and lose events instead of reading them)

each for BASE_LATHIST (`make bench-loader BASE=<git rev>` builds one in build/base and runs
this) and the current build, ROUNDS (3) rounds, base first in odd rounds and current first
in even ones. Prints per build the median with min and max, and the median of the
per-round ratios current / base. For reference, libbpf-tools' `runqlat -L 1` (per thread,
every second, into /dev/null) when /usr/sbin/runqlat is there. Also printed: the histograms
of an interval (the JSON file's at the end of each measurement) and the file's size, the context
switches per second, the CPU the load took, and the CPU that neither it nor the tracer took
(other work on the machine) with the steal time: this VM kind is shared and noisy.

Environment: THREADS, PERIOD_MS, DURATION, SETTLE, ROUNDS. Needs root.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import LATHIST, ROOT, ctxt, schedstat_ns

SLEEPERS = os.path.join(ROOT, "build", "bench", "sleepers")
RUNQLAT = "/usr/sbin/runqlat"
THREADS = int(os.environ.get("THREADS", "10000"))
PERIOD_MS = int(os.environ.get("PERIOD_MS", "100"))
DURATION = float(os.environ.get("DURATION", "20"))
SETTLE = float(os.environ.get("SETTLE", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))

# both halves of the interval buffer share the keyed map: room for two keys per thread
KEYS = ["--max-keys", str(max(10240, 3 * THREADS))]
MODES = {
    "text": ["runq", "--per-thread", *KEYS, "-i", "1"],
    "json": ["runq", "--per-thread", *KEYS, "-i", "1", "-f", "json", "-o", None],
    "total": ["runq", "-i", "1"],
}


def cpu_times():
    """(steal, busy, all) jiffies from /proc/stat's cpu line (busy: not idle or iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[7], sum(v) - v[3] - v[4], sum(v)


def proc_jiffies(pid):
    """utime + stime of every thread of process pid (/proc/PID/stat), in jiffies."""
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[11]) + int(v[12])


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure(cmd, ready, load_pid, out=None):
    """Start cmd (stdout to /dev/null), wait for ready on stderr (None: just the settle
    time), settle, measure; returns a dict of the figures. other: the CPU that neither
    the tracer nor the load (load_pid) used, in % of one CPU: the machine's other work;
    keys: the histograms in out (the JSON file cmd writes) at the end."""
    hz = os.sysconf("SC_CLK_TCK")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if ready:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                line = p.stderr.readline()
                if not line:
                    raise RuntimeError(f"{cmd[0]} ended before attaching: {p.stderr.read()}")
                if ready in line:
                    break
        time.sleep(SETTLE)
        st0, busy0, all0 = cpu_times()
        j0, c0, s0, w0 = proc_jiffies(load_pid), ctxt(), schedstat_ns(p.pid), time.monotonic()
        time.sleep(DURATION)
        st1, busy1, all1 = cpu_times()
        j1, c1, s1, w1 = proc_jiffies(load_pid), ctxt(), schedstat_ns(p.pid), time.monotonic()
        hwm = vm_hwm_kib(p.pid)
        # an interval's document, whole: the file is replaced atomically
        keys, size = (keys_in(out), os.path.getsize(out)) if out else (-1, 0)
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
    wall = w1 - w0
    cpu = 100 * (s1 - s0) / 1e9 / wall
    return {"cpu": cpu, "rss": hwm / 1024, "switches": (c1 - c0) / wall, "keys": keys, "bytes": size,
            "load": 100 * (j1 - j0) / hz / wall,
            "other": 100 * (busy1 - busy0) / hz / wall - 100 * (j1 - j0) / hz / wall - cpu,
            "steal": 100 * (st1 - st0) / max(1, all1 - all0)}


def keys_in(path):
    """Histograms in the last interval written to path."""
    try:
        with open(path) as f:
            return len(json.load(f)["histograms"])
    except (OSError, ValueError, KeyError):
        return -1


def spread(v):
    return f"{statistics.median(v):7.2f} ({min(v):.2f}-{max(v):.2f})"


def main():
    if os.geteuid() != 0 or len(sys.argv) != 2:
        sys.exit("usage (as root): bench/loader_overhead.py BASE_LATHIST")
    builds = {"base": os.path.abspath(sys.argv[1]), "current": LATHIST}
    # SIGTERM ends the run through the finally below: the load stopped, the file removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("loader_overhead: terminated"))
    # the JSON file on tmpfs where there is one: no disk writeback beside the measurement
    tmp = tempfile.mkdtemp(prefix="lathist-loader-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    out = os.path.join(tmp, "interval.json")
    print(f"lathist loader cost on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}: {THREADS} threads each sleeping {PERIOD_MS} ms, "
          f"{DURATION:g} s per measurement after {SETTLE:g} s, {ROUNDS} rounds")
    load = subprocess.Popen([SLEEPERS, str(THREADS), str(PERIOD_MS)], stdout=subprocess.PIPE,
                            text=True)
    res = {(b, m): [] for b in builds for m in MODES}
    ref, keys, noise, size = [], {b: [] for b in builds}, [], 0
    try:
        line = load.stdout.readline()
        if not line.startswith("ready"):
            sys.exit(f"sleepers did not start: {line!r}")
        for rnd in range(ROUNDS):
            order = list(builds) if rnd % 2 == 0 else list(reversed(builds))
            for mode, args in MODES.items():
                for b in order:
                    cmd = [builds[b]] + [a if a is not None else out for a in args]
                    r = measure(cmd, "Tracing", load.pid, out if mode == "json" else None)
                    res[(b, mode)].append(r)
                    noise.append(r)
                    if mode == "json":
                        keys[b].append(r["keys"])
                        size = r["bytes"]
            if os.access(RUNQLAT, os.X_OK):
                ref.append(measure([RUNQLAT, "-L", "1"], None, load.pid))
            print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
    finally:
        load.kill()
        load.wait()
        if os.path.exists(out):
            os.unlink(out)
        os.rmdir(tmp)

    print(f"\n{'condition':8} {'build':8} {'loader % of one CPU':>26} {'VmHWM MiB':>26} "
          f"{'CPU ratio':>10} {'switches/s':>11}")
    for mode in MODES:
        for b in builds:
            rs = res[(b, mode)]
            print(f"{mode:8} {b:8} {spread([r['cpu'] for r in rs]):>26} "
                  f"{spread([r['rss'] for r in rs]):>26} {'':>10} "
                  f"{statistics.median(r['switches'] for r in rs) / 1000:10.0f}k")
        ratios = [c["cpu"] / b["cpu"] for b, c in zip(res[("base", mode)], res[("current", mode)])
                  if b["cpu"] > 0]
        if ratios:
            print(f"{mode:8} {'cur/base':8} {'':>26} {'':>26} {statistics.median(ratios):9.3f}x")
    if ref:
        print(f"{'runqlat':8} {'-L 1':8} {spread([r['cpu'] for r in ref]):>26} "
              f"{spread([r['rss'] for r in ref]):>26}")
    print(f"\nhistograms in an interval (json, at the end of each measurement): base "
          f"{keys['base']}, current {keys['current']}; the last JSON document measured {size / 1e6:.1f} MB")
    print(f"the load (sleepers) used {spread([r['load'] for r in noise])} % of one CPU; "
          f"other work on the machine {spread([r['other'] for r in noise])} % of one CPU; "
          f"steal {spread([r['steal'] for r in noise])} % of CPU time")


if __name__ == "__main__":
    main()
