#!/usr/bin/env python3
"""Cost of `lathist serve` on a busy host: its own CPU (the on-CPU time of all its threads,
/proc/PID/task/*/schedstat) as a share of one CPU while Prometheus-like scrapes come every
SCRAPE seconds, against `lathist runq -i 1` (the same map reads each second, no aggregate,
no HTTP) measured in the same run; then its memory (VmHWM) and exposition size through a
thread storm at several --max-series, against the same storm with no cap that matters.

Load: `perf bench sched pipe` unpinned (the busy host: some 10^5 context switches a second
here) and O_DIRECT reads and writes on a loop device, all along; the storm is
`runqwork churn THREADS 0` (THREADS short threads one after another) beside it.
Conditions interleaved over ROUNDS rounds, medians. Environment: SECONDS_PER (30),
SCRAPE (15), ROUNDS (3), THREADS (20000). Needs root, perf and a built tree (make).
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from benchlib import LATHIST, ROOT, Tracer, ctxt, loop_device

SECONDS_PER = float(os.environ.get("SECONDS_PER", "30"))
SCRAPE = float(os.environ.get("SCRAPE", "15"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
THREADS = int(os.environ.get("THREADS", "20000"))
RUNQWORK = os.path.join(ROOT, "build", "tests", "runqwork")
BIOWORK = os.path.join(ROOT, "build", "tests", "biowork")
OUTFILE = os.path.join(tempfile.gettempdir(), f"lathist-bench-{os.getpid()}.prom")


def cpu_s(pid):
    """On-CPU seconds of process pid's threads (/proc/PID/task/*/schedstat field 1, ns; its
    threads live as long as it does, none ends in between)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith(field + ":")).split()[1])


class Load:
    """perf bench sched pipe and loop-device I/O in the background until stopped."""

    def __enter__(self):
        self.dev, self.cleanup = loop_device()
        self.halt = threading.Event()
        # its own process group: perf bench sched pipe forks, and both halves must end
        self.pipe = subprocess.Popen(["perf", "bench", "sched", "pipe", "-l", "1000000000"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.io = threading.Thread(target=self.io_loop, daemon=True)
        self.io.start()
        return self

    def io_loop(self):
        while not self.halt.is_set():
            p = subprocess.Popen([BIOWORK, "direct", self.dev, "500", "4096", "500", "16384"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            p.communicate(b"go\n")
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.halt.set()
        os.killpg(self.pipe.pid, signal.SIGKILL)
        self.pipe.wait()
        self.io.join(30)
        self.cleanup()


def scrape(addr):
    t0 = time.monotonic()
    body = urllib.request.urlopen(f"http://{addr}/metrics", timeout=30).read()
    return len(body), time.monotonic() - t0


def port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_condition(args, scrape_every):
    """Share of one CPU the process used over SECONDS_PER s, scraped every scrape_every s
    (None: a plain tool, nothing to scrape)."""
    addr = None
    if args[0] == "serve":
        addr = f"127.0.0.1:{port()}"
        args = [*args, "--listen", addr]
    ready = "Serving" if addr else "Tracing"
    with Tracer([LATHIST, *args], ready) as t:
        time.sleep(1.5)		# past startup (BTF, load, attach, the first reads)
        c0, w0, x0 = cpu_s(t.p.pid), time.monotonic(), ctxt()
        nxt = w0
        while time.monotonic() - w0 < SECONDS_PER:
            if addr and time.monotonic() >= nxt:
                scrape(addr)
                nxt += scrape_every
            time.sleep(0.05)
        c1, w1, x1 = cpu_s(t.p.pid), time.monotonic(), ctxt()
    return (c1 - c0) / (w1 - w0), (x1 - x0) / (w1 - w0)


def storm(max_series):
    """Peak RSS, largest exposition and slowest scrape of serve --per-thread through a
    storm of THREADS threads (scraped every second), and the series at its end."""
    addr = f"127.0.0.1:{port()}"
    w = subprocess.Popen([RUNQWORK, "churn", str(THREADS), "0"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pid = int(w.stdout.readline().split()[1])
    args = ["serve", "--tools", "runq", "--per-thread", "-p", str(pid), "--listen", addr,
            "--max-series", str(max_series), "--fold-idle", "10s"]
    with Tracer([LATHIST, *args], "Serving") as t:
        time.sleep(1.5)
        w.stdin.write("go\n")
        w.stdin.flush()
        drain = threading.Thread(target=w.stdout.read, daemon=True)
        drain.start()
        sizes, times = [], []
        while w.poll() is None:
            n, s = scrape(addr)
            sizes.append(n)
            times.append(s)
            time.sleep(1)
        n, s = scrape(addr)
        sizes.append(n)
        times.append(s)
        hwm = status_kb(t.p.pid, "VmHWM")
    return hwm, max(sizes), max(times)


def main():
    if os.geteuid() != 0:
        sys.exit("bench needs root")
    conditions = {
        "lathist runq --per-cgroup -i 1 -o FILE (baseline)":
            (["runq", "--per-cgroup", "-i", "1", "-f", "openmetrics", "-o", OUTFILE], None),
        f"serve --per-cgroup --per-disk, scraped every {SCRAPE:g} s":
            (["serve", "--per-cgroup", "--per-disk"], SCRAPE),
        "serve --per-cgroup --per-disk, scraped every 1 s":
            (["serve", "--per-cgroup", "--per-disk"], 1.0),
        f"serve --per-thread (max-series 100), every {SCRAPE:g} s":
            (["serve", "--per-thread"], SCRAPE),
    }
    res = {name: [] for name in conditions}
    with Load():
        for rnd in range(ROUNDS):
            for name, (args, every) in conditions.items():
                res[name].append(cpu_condition(args, every))
            print(f"  round {rnd + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
        storms = {n: storm(n) for n in (10, 100, 1000, 1000000)}
    os.unlink(OUTFILE)
    print(f"lathist serve overhead on {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d')}; {SECONDS_PER:g} s per condition, {ROUNDS} rounds "
          f"interleaved, medians; load: perf bench sched pipe (unpinned) + O_DIRECT I/O on a "
          f"loop device")
    base = statistics.median(r[0] for r in res[next(iter(conditions))])
    print(f"  {'condition':58} {'% of one CPU':>12} {'x baseline':>10} {'switches/s':>11}")
    for name in conditions:
        c = statistics.median(r[0] for r in res[name])
        sw = statistics.median(r[1] for r in res[name])
        print(f"  {name:58} {100 * c:11.3f}% {c / base:9.2f}x {sw:11.0f}")
    print(f"\nStorm: runqwork churn {THREADS} 0 under serve --tools runq --per-thread "
          f"--fold-idle 10s, scraped every second")
    ref = storms[1000000]
    print(f"  {'--max-series':>12} {'peak RSS':>10} {'x no cap':>9} {'largest scrape':>15} "
          f"{'x no cap':>9} {'slowest':>9}")
    for n, (hwm, size, secs) in storms.items():
        print(f"  {n:>12} {hwm / 1024:8.1f} MB {hwm / ref[0]:8.2f}x {size / 1e6:12.2f} MB "
              f"{size / ref[1]:8.3f}x {1000 * secs:7.1f} ms")


if __name__ == "__main__":
    main()
