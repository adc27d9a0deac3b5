"""Helpers for lathist integration tests: run the tool and the workload side by side."""
import contextlib
import errno
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LATHIST = os.path.join(ROOT, "lathist")
RUNQWORK = os.path.join(ROOT, "build", "tests", "runqwork")
BIOWORK = os.path.join(ROOT, "build", "tests", "biowork")
TOOLS = os.path.join(ROOT, "build", "tools", "usr", "bin")   # Debian's Prometheus, unpacked


class TestFailure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def _readline(stream, timeout, what):
    """Read one line from a pipe within timeout seconds."""
    end = time.monotonic() + timeout
    buf = b""
    fd = stream.fileno()
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        ch = os.read(fd, 1)
        if not ch:
            break
        buf += ch
        if ch == b"\n":
            return buf.decode()
    raise TestFailure(f"timed out waiting for {what} (got {buf!r})")


_running = []


# a runner killed mid-test leaves no tracer running (and a --events file growing) behind
# it: its children get SIGTERM when it dies (prctl PR_SET_PDEATHSIG, set by util-linux's
# setpriv before the exec: no preexec_fn, which is unsafe beside a test's threads)
DIE_WITH_RUNNER = ["setpriv", "--pdeathsig", "TERM"]


def cleanup():
    """Stop every background process a test started and left running (after a failure)."""
    while _running:
        p = _running.pop()
        if p.poll() is None:
            p.kill()
            try:
                p.communicate(timeout=30)
            except Exception:
                pass


class Lathist:
    """lathist VERB ARGS in the background; start() returns once it prints 'Tracing'."""

    def __init__(self, *args, test=None):
        """test: $LATHIST_TEST, the test hooks (src/cli.c), e.g. "no-sweep"."""
        self.args = [LATHIST, *args]
        self.env = dict(os.environ, LATHIST_TEST=test) if test else None
        self.proc = None
        self.stderr_head = ""

    def start(self, timeout=60):
        self.proc = subprocess.Popen(DIE_WITH_RUNNER + self.args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self.env)
        _running.append(self.proc)
        while True:
            line = _readline(self.proc.stderr, timeout, "'Tracing' from " + " ".join(self.args))
            self.stderr_head += line
            if line.startswith("Tracing"):
                return self

    def stop(self, sig=signal.SIGINT, timeout=60):
        """Signal it, wait, and return (returncode, stdout, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out.decode(), self.stderr_head + err.decode()

    def wait(self, timeout=120):
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out.decode(), self.stderr_head + err.decode()


@contextlib.contextmanager
def full_tmpfs(size="1m"):
    """A tmpfs of size in a temporary folder, filled up by the file fill in it (written
    until ENOSPC); yields (folder, fill path). Room for two reports once fill is removed:
    -o writes the new one beside the old before it replaces it."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", tmp], check=True)
        try:
            fill = os.path.join(tmp, "fill")
            with open(fill, "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 4096)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
            yield tmp, fill
        finally:
            subprocess.run(["umount", tmp], check=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Serve:
    """lathist serve ARGS on a free 127.0.0.1 port; start() returns once it prints
    'Serving'; get() is one HTTP request: (status, headers, body)."""

    def __init__(self, *args, port=None):
        self.port = port or free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.proc = Lathist("serve", "--listen", self.addr, *args)

    def start(self, timeout=60):
        p = self.proc
        p.proc = subprocess.Popen(DIE_WITH_RUNNER + p.args, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        _running.append(p.proc)
        while True:
            line = _readline(p.proc.stderr, timeout, "'Serving' from " + " ".join(p.args))
            p.stderr_head += line
            if line.startswith("Serving"):
                # "Serving runq (tp_btf), bio (tp_btf) on http://..."
                self.tools = [t.split()[0] for t in line[8:line.index(" on http")].split(", ")]
                return self

    def first_interval(self, timeout=30):
        """Wait until every tool's first interval is read (its families are served)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            body = self.get()[2]
            if all(f"lathist_{t}_duration_seconds" in body for t in self.tools):
                return body
            time.sleep(0.1)
        raise TestFailure(f"serve showed no interval in {timeout} s")

    @property
    def pid(self):
        return self.proc.proc.pid

    def get(self, path="/metrics", accept=None, method="GET", timeout=10):
        req = urllib.request.Request(f"http://{self.addr}{path}", method=method,
                                     headers={"Accept": accept} if accept else {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def stop(self, sig=signal.SIGINT, timeout=60):
        return self.proc.stop(sig, timeout)


def run(*args, timeout=120, test=None, **kw):
    """Run lathist to completion: (returncode, stdout, stderr); test: $LATHIST_TEST."""
    if test:
        kw["env"] = dict(os.environ, LATHIST_TEST=test)
    p = subprocess.run([LATHIST, *args], capture_output=True, timeout=timeout, **kw)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


class Workload:
    """runqwork (or exe) MODE ARGS: start() returns its pid; go() lets it run; wait()
    returns its JSON lines."""

    def __init__(self, *args, exe=RUNQWORK):
        self.args = [exe, *[str(a) for a in args]]

    def start(self):
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        _running.append(self.proc)
        line = _readline(self.proc.stdout, 30, "workload ready")
        check(line.startswith("ready "), f"workload said {line!r}")
        self.pid = int(line.split()[1])
        return self.pid

    def go(self):
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()

    def wait(self, timeout=300, leader=False):
        """leader: also read the main thread's schedstat once the process is dead but not
        yet reaped (final, its exit included) into self.leader: (oncpu_ns, run_delay_ns,
        pcount)."""
        if leader:
            out = self.proc.stdout.read()	# EOF: every thread has exited
            os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)
            with open(f"/proc/{self.proc.pid}/schedstat") as f:
                self.leader = tuple(int(v) for v in f.read().split())
            _, err = self.proc.communicate(timeout=timeout)
        else:
            out, err = self.proc.communicate(timeout=timeout)
        check(self.proc.returncode == 0,
              f"workload {self.args} failed rc={self.proc.returncode}: {err.decode()}")
        rows = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        return rows


def traced(workload, *lathist_args, pid_filter=True, verb="runq"):
    """Attach lathist (-p workload pid unless pid_filter is False), run the workload
    to its end, stop lathist; returns (workload rows, lathist JSON document)."""
    pid = workload.start()
    args = list(lathist_args)
    if pid_filter:
        args = ["-p", str(pid)] + args
    tool = Lathist(verb, "-f", "json", *args).start()
    workload.go()
    rows = workload.wait()
    rc, out, err = tool.stop()
    check(rc == 0, f"lathist exited {rc}: {err}")
    return rows, json.loads(out)


def traced_side_by_side(workload, tools, pid_filter=True, verb="runq"):
    """One lathist per entry of tools ({name: [args]}, each with -p workload pid unless
    pid_filter is False), all attached before the workload starts, stopped after its end;
    returns (workload rows, {name: JSON document})."""
    pid = workload.start()
    pre = ["-p", str(pid)] if pid_filter else []
    running = {name: Lathist(verb, "-f", "json", *pre, *args).start()
               for name, args in tools.items()}
    workload.go()
    rows = workload.wait()
    docs = {}
    for name, tool in running.items():
        rc, out, err = tool.stop()
        check(rc == 0, f"{name}: lathist exited {rc}: {err}")
        docs[name] = json.loads(out)
    return rows, docs


def per_task(doc, field="tid"):
    """{(id, start_ns): {"count", "sum_ns", "max_ns", "kinds": {name: hist}, "comm"}}"""
    tasks = {}
    for h in doc["histograms"]:
        k = h["key"]
        t = tasks.setdefault((k[field], k["start_ns"]),
                             {"count": 0, "sum_ns": 0, "max_ns": 0, "kinds": {}, "comm": k["comm"]})
        t["count"] += h["count"]
        t["sum_ns"] += h["sum_ns"]
        t["max_ns"] = max(t["max_ns"], h["max_ns"])
        t["kinds"][h["name"]] = h
    return tasks


def by_id(tasks):
    """Collapse (id, start) keys to id, failing if an id occurs twice."""
    out = {}
    for (i, _), v in tasks.items():
        check(i not in out, f"id {i} has two histogram keys where one task was expected")
        out[i] = v
    return out


class LoopDevice:
    """A loop device over a sparse file, removed with its file on exit (also on failure)."""

    def __init__(self, size_mb=64, scheduler=None):
        self.size_mb, self.scheduler = size_mb, scheduler

    def __enter__(self):
        fd, self.file = tempfile.mkstemp(prefix="lathist-loop-", dir="/var/tmp")
        os.ftruncate(fd, self.size_mb << 20)
        os.close(fd)
        try:
            self.dev = subprocess.run(["losetup", "--find", "--show", self.file], check=True,
                                      capture_output=True, text=True).stdout.strip()
        except Exception:
            os.unlink(self.file)
            raise
        self.name = os.path.basename(self.dev)
        if shutil.which("udevadm"):
            subprocess.run(["udevadm", "settle"], capture_output=True)
        if self.scheduler:
            with open(f"/sys/block/{self.name}/queue/scheduler", "w") as f:
                f.write(self.scheduler)
        return self

    def schedulers(self):
        with open(f"/sys/block/{self.name}/queue/scheduler") as f:
            return f.read().replace("[", "").replace("]", "").split()

    def stat(self):
        """(reads completed, writes completed) from /sys/block/NAME/stat."""
        with open(f"/sys/block/{self.name}/stat") as f:
            v = f.read().split()
        return int(v[0]), int(v[4])

    def merges(self):
        """Read and write merges from /sys/block/NAME/stat: every bio merged into a queued
        request and every request merged into another (no request of its own completes)."""
        with open(f"/sys/block/{self.name}/stat") as f:
            v = f.read().split()
        return int(v[1]) + int(v[5])

    def __exit__(self, *exc):
        subprocess.run(["losetup", "-d", self.dev], capture_output=True)
        try:
            os.unlink(self.file)
        except OSError:
            pass


def paragraph(text, start):
    """The text's paragraph whose first line starts with `start` (a loss or kernel gap
    line: continuation lines are indented by two spaces), joined by spaces; None if none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(start):
            out = [line]
            for more in lines[i + 1:]:
                if not more.startswith("  ") or more.startswith("   "):
                    break
                out.append(more.strip())
            return " ".join(out)
    return None


def verbose_classes(text):
    """{name: (value, kind)} of -v's "events and losses" table; kind is "loss", "gap"
    or "event" (the lines say LOSS: or KERNEL GAP:)."""
    rows, on = {}, False
    for line in text.splitlines():
        if line.startswith("events and losses"):
            on = True
            continue
        if on and not line.startswith("  "):
            break
        if on:
            name, value, rest = line.split(None, 2)[0], int(line.split()[1]), line
            rows[name] = (value, "loss" if "LOSS: " in rest else
                          "gap" if "KERNEL GAP: " in rest else "event")
    return rows
