"""Shared pieces of the lathist benchmarks: tracers in the background, bpf_stats."""
import atexit
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHIST = os.path.join(ROOT, "lathist")
EMPTY = os.path.join(ROOT, "build", "bench", "empty")
LOOPS = int(os.environ.get("LOOPS", "200000"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))


def mount_tracefs():
    """bpftrace attaches tracepoints through tracefs, which a fresh machine may not have
    mounted (lathist needs none): mounted for the bench, unmounted at its exit."""
    if subprocess.run(["mountpoint", "-q", "/sys/kernel/tracing"]).returncode:
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        atexit.register(subprocess.run, ["umount", "/sys/kernel/tracing"])
        # atexit does not run on a signal's default action: SIGTERM exits through it
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def pipe_bench(pinned=True, loops=LOOPS):
    """Run perf bench sched pipe; returns (seconds, context switches system-wide)."""
    cmd = ["perf", "bench", "sched", "pipe", "-l", str(loops)]
    if pinned:
        cmd = ["taskset", "-c", "1"] + cmd
    c0 = ctxt()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    c1 = ctxt()
    return float(re.search(r"Total time:\s+([\d.]+)", out).group(1)), c1 - c0


class Tracer:
    """A tracer in the background, started once it says it is attached. With stderr_path,
    its stderr goes to that file (read for ready) instead of a pipe read only until then,
    for a tracer that keeps writing there (text records)."""

    def __init__(self, cmd, ready, stream="stderr", settle=0.0, env=None, stderr_path=None):
        self.cmd, self.ready, self.stream, self.settle = cmd, ready, stream, settle
        self.env, self.stderr_path = env, stderr_path

    def __enter__(self):
        if self.stderr_path:
            return self._enter_file()
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=self.env)
        pipe = self.p.stderr if self.stream == "stderr" else self.p.stdout
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = pipe.readline()
            if not line:
                raise RuntimeError(f"{self.cmd[0]} ended before attaching: "
                                   f"{self.p.stderr.read()}")
            if self.ready in line:
                break
        time.sleep(self.settle)
        return self

    def _enter_file(self):
        with open(self.stderr_path, "w") as err:
            self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                      env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(self.stderr_path, errors="replace") as f:
                if self.ready in f.read(65536):
                    break
            if self.p.poll() is not None:
                with open(self.stderr_path, errors="replace") as f:
                    raise RuntimeError(f"{self.cmd[0]} ended before attaching: {f.read()}")
            time.sleep(0.05)
        time.sleep(self.settle)
        return self

    def __exit__(self, *exc):
        self.p.send_signal(2)
        try:
            self.p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()


def prog_stats(tracers, load, prefixes):
    """run_time_ns / run_cnt of programs whose name starts with one of prefixes, with
    kernel.bpf_stats_enabled=1 while tracers run and load() runs."""
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        old = f.read().strip()
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        entered = []
        try:
            for t in tracers:
                entered.append(t.__enter__())
            load()
            progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"],
                                              capture_output=True, text=True).stdout)
        finally:
            for t in reversed(entered):
                t.__exit__(None, None, None)
    finally:
        subprocess.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={old}"], check=True)
    print("\nPer program (kernel.bpf_stats_enabled=1, which adds ~60 ns to every run):")
    print(f"  {'program':24} {'type':10} {'runs':>10} {'ns/run':>8}")
    for p in sorted(progs, key=lambda p: p.get("name", "")):
        name = p.get("name", "")
        if name.startswith(tuple(prefixes)) and p.get("run_cnt"):
            print(f"  {name:24} {p['type']:10} {p['run_cnt']:10d} "
                  f"{p['run_time_ns'] / p['run_cnt']:8.0f}")


def schedstat_ns(pid):
    """On-CPU ns of process pid so far (/proc/PID/schedstat field 1)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def prog_runs(prefix="runq_"):
    """{program name: (run_cnt, run_time_ns)} of the programs named prefix* loaded now."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    out = {}
    for p in progs:
        name = p.get("name", "")
        if name.startswith(prefix) and p.get("run_cnt"):
            out[name] = (p["run_cnt"], p["run_time_ns"])
    return out


def ns_per_run(before, after, word):
    """ns per run of the programs whose name holds word, between two prog_runs()."""
    cnt = sum(after[n][0] - before.get(n, (0, 0))[0] for n in after if word in n)
    t = sum(after[n][1] - before.get(n, (0, 0))[1] for n in after if word in n)
    return t / cnt if cnt else float("nan")


class BpfStats:
    """kernel.bpf_stats_enabled=1 inside the with block, the old value after."""

    def __enter__(self):
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            self.old = f.read().strip()
        subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
        return self

    def __exit__(self, *exc):
        subprocess.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={self.old}"], check=True)


def fio(dev, seconds):
    """fio 4 KiB O_DIRECT random reads (psync, depth 1) on dev for seconds: its read
    job's figures (iops, total_ios, ...)."""
    out = subprocess.run(["fio", "--name=bench", f"--filename={dev}", "--direct=1",
                          "--rw=randread", "--bs=4k", "--ioengine=psync", "--size=64m",
                          f"--runtime={seconds:g}", "--time_based", "--output-format=json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["jobs"][0]["read"]


def loop_device(where="/var/tmp", direct_io=False):
    """(device, cleanup): a loop device over a 64 MiB file in where (--direct-io=on if
    direct_io); cleanup() detaches it and removes the file."""
    fd, backing = tempfile.mkstemp(prefix="lathist-bench-", dir=where)
    os.ftruncate(fd, 64 << 20)
    os.close(fd)
    dev = subprocess.run(["losetup", "--find", "--show", *(["--direct-io=on"] if direct_io else []),
                          backing], check=True, capture_output=True, text=True).stdout.strip()

    def cleanup():
        subprocess.run(["losetup", "-d", dev], check=False)
        os.unlink(backing)
    return dev, cleanup
