"""lathist doctor: read-only checks, agreeing with what the verbs then do."""
import json
import subprocess

from lh import LATHIST, check, run

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all",
          "--bounding-set=-all"]


def read_sysctl(name):
    with open(f"/proc/sys/kernel/{name}") as f:
        return f.read().strip()


def test_doctor_as_root():
    """Root here: every needed check ok, runq and bio can run (and do), exit 0; the JSON
    says the same; nothing was changed (bpf_stats_enabled)."""
    stats = read_sysctl("bpf_stats_enabled")
    rc, out, err = run("doctor")
    check(rc == 0 and "runq: can run" in out and "bio:  can run" in out, f"rc {rc}\n{out}{err}")
    for line in ("ok       capabilities", "ok       btf", "ok       tp sched_switch",
                 "ok       tp block_rq_complete", "ok       ring buffer",
                 "ok       counter cpu-clock"):
        check(line in out, f"missing {line!r} in\n{out}")
    rc, out, err = run("doctor", "-f", "json")
    doc = json.loads(out)
    check(rc == 0 and doc["runq"] and doc["bio"], f"{rc} {doc['runq']} {doc['bio']}")
    checks = {c["check"]: c for c in doc["checks"]}
    check(checks["btf"]["status"] == "ok" and checks["task storage"]["status"] == "ok" and
          checks["bpf atomics"]["status"] == "ok",
          f"{checks['btf']} {checks['task storage']} {checks['bpf atomics']}")
    # the counters it calls countable can be counted; the ones it calls missing cannot
    for name, c in checks.items():
        if not name.startswith("counter "):
            continue
        ev = name.split(" ", 1)[1]
        rc, _, err = run("runq", "--counters", ev, "-d", "0.1")
        check((rc == 0) == (c["status"] == "ok"), f"{name}: doctor {c['status']}, runq rc {rc}")
    # the sweeps it calls loadable load: runq and bio then say nothing NOT CHECKED
    for name, verb in (("runq sweeps", "runq"), ("bio sweep", "bio")):
        rc, out, err = run(verb, "-d", "0.2", "-f", "json")
        check((checks[name]["status"] == "ok") == (json.loads(out)["meta"]["unchecked"] is None),
              f"{name}: doctor {checks[name]}, {verb}: {json.loads(out)['meta']['unchecked']}")
    # lockdown: read from securityfs; without it, "unknown", never "no lockdown"
    mounted = any(l.split()[2] == "securityfs" for l in open("/proc/mounts"))
    check(mounted or checks["lockdown"]["detail"].startswith("unknown"), checks["lockdown"])
    check(read_sysctl("bpf_stats_enabled") == stats, "doctor changed a sysctl")
    rc, out, err = run("doctor", "-f", "yaml")
    check(rc == 2 and "-f 'yaml'" in err, err)


def test_doctor_as_nobody():
    """Without privileges: capabilities denied with the fix, runq and bio cannot run,
    exit 1; the verbs then say the same in one line."""
    p = subprocess.run(NOBODY + [LATHIST, "doctor"], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 1, f"rc {p.returncode}: {p.stdout}{p.stderr}")
    line = next((l for l in p.stdout.splitlines() if "capabilities" in l), "")
    check(line.startswith("denied") and "CAP_BPF no" in line and "sudo" in line, line)
    check("runq: cannot run" in p.stdout and "bio:  cannot run" in p.stdout, p.stdout)
    check("libbpf" not in p.stderr, f"libbpf noise: {p.stderr}")
    line = next(l for l in p.stdout.splitlines() if "tp sched_switch" in l)
    check(line.startswith("ok") and "tp_btf and raw_tp" in line, line)


def test_doctor_without_tracefs():
    """tracefs unmounted (in a private mount namespace): lathist needs none of it (tp_btf
    and raw_tp attach without it), so doctor neither checks it nor fails: every
    tracepoint still reads ok from BTF, exit 0."""
    script = ("for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do "
              f"umount -l $m 2>/dev/null; done; {LATHIST} doctor")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"rc {p.returncode}: {p.stdout}{p.stderr}")
    check(" tracefs " not in p.stdout, p.stdout)
    line = next(l for l in p.stdout.splitlines() if "tp sched_switch" in l)
    check(line.startswith("ok") and "tp_btf and raw_tp" in line, line)
