"""The measurement context (meta.context, meta.load): every field against the same fact read
here from /proc, /sys, uname, systemd-detect-virt, dpkg and git; report's merge of runs
measured in different contexts (mixed, listed, one warning) and report --diff against
percentiles computed here from the documents' slots."""
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import tempfile

from lh import LATHIST, ROOT, LoopDevice, Lathist, Workload, check, run

USER_HZ_NS = 10**9 // os.sysconf("SC_CLK_TCK")


def read(path):
    try:
        with open(path) as f:
            return f.readline().rstrip("\n")
    except OSError:
        return None


def kernel_cmdline():
    """/proc/cmdline up to "--": what follows is init's, not the kernel's."""
    words = read("/proc/cmdline").split()
    return words[:words.index("--")] if "--" in words else words


def expected_cmdline():
    names = ["isolcpus", "nohz_full", "nohz", "rcu_nocbs", "rcu_nocb_poll", "threadirqs",
             "preempt", "mitigations", "nosmt", "irqaffinity", "idle", "skew_tick",
             "intel_idle.max_cstate", "processor.max_cstate", "intel_pstate", "nosoftlockup"]
    out = {}
    for w in kernel_cmdline():
        name, eq, value = w.partition("=")
        if name in names:
            out[name] = value if eq else True
    return out


def config_lines():
    rel = os.uname().release
    if os.path.exists("/proc/config.gz"):
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read().splitlines()
    path = f"/boot/config-{rel}"
    if os.path.exists(path):
        with open(path) as f:
            return f.read().splitlines()
    return []


def preempt_from_config(lines):
    """The build's default preemption model (Kconfig: one of the choice is =y)."""
    for opt, model in (("CONFIG_PREEMPT_RT=y", "rt"), ("CONFIG_PREEMPT_LAZY=y", "lazy"),
                       ("CONFIG_PREEMPT=y", "full"), ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
                       ("CONFIG_PREEMPT_NONE=y", "none")):
        if opt in lines:
            return model
    return None


def expected_preempt():
    """(model, source): RT from uname -v; else debugfs's sched/preempt, read in a mount
    namespace of its own (unshare -m) unless lockdown forbids; else preempt=; else the
    config's default."""
    version = os.uname().version
    if "PREEMPT_RT" in version:
        return "rt", "version"
    sh = ("mount --make-rprivate /; mount -t securityfs none /sys/kernel/security 2>/dev/null;"
          " if grep -q '\\[none\\]' /sys/kernel/security/lockdown 2>/dev/null ||"
          " [ ! -e /sys/kernel/security/lockdown ]; then"
          " mount -t debugfs none /sys/kernel/debug 2>/dev/null;"
          " cat /sys/kernel/debug/sched/preempt 2>/dev/null; fi")
    out = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True).stdout
    m = re.search(r"\((\w+)\)", out)
    if m:
        return m.group(1), "debugfs"
    pre = [w.split("=", 1)[1] for w in kernel_cmdline() if w.startswith("preempt=")]
    if "PREEMPT_DYNAMIC" in version and pre and pre[-1] in ("none", "voluntary", "full", "lazy"):
        return pre[-1], "cmdline"
    model = preempt_from_config(config_lines())
    if model:
        return model, "config"
    return ("full", "version") if " PREEMPT " in version else (None, None)


def expected_governor():
    online = read("/sys/devices/system/cpu/online")
    cpus = []
    for part in online.split(","):
        a, _, b = part.partition("-")
        cpus += range(int(a), int(b or a) + 1)
    govs = {c: read(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor") for c in cpus}
    govs = {c: g for c, g in govs.items() if g}
    if not govs:
        return None
    names = sorted(set(govs.values()), key=lambda g: min(c for c in govs if govs[c] == g))
    return names[0] if len(names) == 1 else "mixed governors"	# checked loosely below


# systemd-detect-virt --vm's names for the vendors lathist reads from cpuid
VIRT = {"kvm": "KVM", "qemu": "QEMU TCG", "microsoft": "Hyper-V", "vmware": "VMware",
        "xen": "Xen", "oracle": "VirtualBox", "none": "none", "bhyve": "bhyve",
        "parallels": "Parallels", "acrn": "ACRN", "qnx": "QNX"}


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def proc_stat():
    """(steal ns, user..steal ns) of /proc/stat's cpu line."""
    v = [int(x) for x in read("/proc/stat").split()[1:9]]
    return v[7] * USER_HZ_NS, sum(v) * USER_HZ_NS


def test_context_fields_match_proc_and_sys():
    rc, out, err = run("runq", "-d", "0.3", "-f", "json")
    check(rc == 0, err)
    ctx = json.loads(out)["meta"]["context"]
    u = os.uname()
    want = {
        "boot_id": read("/proc/sys/kernel/random/boot_id"),
        "kernel_release": u.release, "kernel_version": u.version, "machine": u.machine,
        "cmdline": expected_cmdline(), "cpu_model": cpu_model(),
        "cpus_online": read("/sys/devices/system/cpu/online"),
        "smt": read("/sys/devices/system/cpu/smt/control"),
    }
    for k, v in want.items():
        check(ctx[k] == v, f"meta.context.{k} is {ctx[k]!r}; /proc, /sys or uname say {v!r}")
    model, source = expected_preempt()
    check((ctx["preempt"], ctx["preempt_source"]) == (model, source),
          f"preempt {ctx['preempt']} ({ctx['preempt_source']}), read here {model} ({source})")
    gov = expected_governor()
    if gov == "mixed governors":
        check(ctx["governor"] and "(" in ctx["governor"], f"governor {ctx['governor']}")
    else:
        check(ctx["governor"] == gov, f"governor {ctx['governor']!r}, sysfs {gov!r}")
    virt = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True,
                          text=True).stdout.strip()
    if virt in VIRT:
        check(ctx["hypervisor"] == VIRT[virt],
              f"hypervisor {ctx['hypervisor']!r}; systemd-detect-virt --vm says {virt}")
    rc, ver, _ = run("--version")
    check(ctx["lathist_version"] in ver, f"lathist_version {ctx['lathist_version']} vs {ver}")
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode == 0:
        check(ctx["git_revision"] and ctx["git_revision"].startswith(head.stdout.strip()),
              f"git_revision {ctx['git_revision']}, HEAD {head.stdout.strip()} (if HEAD is "
              f"newer, this lathist was built before it: run make)")
    pkg = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libbpf1"],
                         capture_output=True, text=True).stdout
    upstream = re.sub(r"^\d+:", "", pkg).split("-")[0]	# "1:1.1.0-1" -> "1.1.0"
    check(upstream.startswith(ctx["libbpf_version"]),
          f"libbpf_version {ctx['libbpf_version']}, the package is {pkg}")
    print(f"  context: preempt {ctx['preempt']} ({ctx['preempt_source']}), hypervisor "
          f"{ctx['hypervisor']}, smt {ctx['smt']}, governor {ctx['governor']}, cmdline "
          f"{ctx['cmdline']}", flush=True)


def load_checks(docs, before, after):
    """Each interval's cpu_ns is online CPUs x its duration, to the nanosecond (one
    interval's end is the next's start); steal_ns is at most cpu_ns and, summed, at most
    what /proc/stat counted around the whole run. Returns the steal summed."""
    ncpus = os.cpu_count()
    steal = 0
    for d in docs:
        ld, dur = d["meta"]["load"], d["meta"]["duration_ns"]
        check(ld["cpu_ns"] == ncpus * dur,
              f"interval {d['meta']['interval_index']}: cpu_ns {ld['cpu_ns']} vs {ncpus} CPUs x "
              f"{dur} ns")
        check(ld["steal_ns"] <= ld["cpu_ns"], f"{ld}")
        check(ld["loadavg_1m_max"] == max(ld["loadavg_1m_start"], ld["loadavg_1m_end"]), f"{ld}")
        steal += ld["steal_ns"]
    check(steal <= after[0] - before[0], f"steal {steal} > /proc/stat's {after[0] - before[0]}")
    return steal


def test_load_per_interval_adds_up():
    """Per interval: cpu_ns, steal_ns and the load average (load_checks); one interval's
    load average at its end is the next's at its start."""
    before = proc_stat()
    loads = [read("/proc/loadavg").split()[0]]
    tool = Lathist("runq", "-i", "1", "-d", "3", "-f", "json").start()
    loads.append(read("/proc/loadavg").split()[0])
    rc, out, err = tool.wait()
    after = proc_stat()
    check(rc == 0, err)
    docs = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(len(docs) == 3, f"{len(docs)} intervals")
    load_checks(docs, before, after)
    for a, b in zip(docs, docs[1:]):
        check(a["meta"]["load"]["loadavg_1m_end"] == b["meta"]["load"]["loadavg_1m_start"],
              f"{a['meta']['load']} then {b['meta']['load']}")
    # the kernel updates the load average every 5 s: lathist's first sample, taken once
    # it said Tracing, is the one read here just before it started or just after
    check(f'{docs[0]["meta"]["load"]["loadavg_1m_start"]:.2f}' in loads,
          f"{docs[0]['meta']['load']} vs /proc/loadavg {loads}")


def test_load_beside_many_short_wakeups():
    """Beside 3,000 threads each woken every 100 ms (and --per-thread, whose reads take
    time after each interval ends) cpu_ns is still CPUs x duration: it was the sum of
    /proc/stat's modes, which the kernel samples at ticks, and read after the interval's
    histograms: 0.89x and 1.32x of CPUs x duration here."""
    w = Workload("crowd", 3000, 100)
    w.start()
    try:
        before = proc_stat()
        rc, out, err = run("runq", "--per-thread", "-i", "1", "-d", "3", "-f", "json")
        after = proc_stat()
    finally:
        w.go()
        w.wait()
    check(rc == 0, err)
    docs = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(len(docs) == 3, f"{len(docs)} intervals")
    load_checks(docs, before, after)


def test_bio_disk_queue_settings():
    """The traced disk's scheduler and nr_requests as set here, rotational and the queue
    depth as sysfs has them."""
    with LoopDevice(size_mb=16) as dev:
        scheds = dev.schedulers()
        pick = "none" if "none" in scheds else scheds[0]
        with open(f"/sys/block/{dev.name}/queue/scheduler", "w") as f:
            f.write(pick)
        with open(f"/sys/block/{dev.name}/queue/nr_requests", "w") as f:
            f.write("32")
        rc, out, err = run("bio", "--disk", dev.name, "-d", "0.2", "-f", "json")
        check(rc == 0, err)
        disks = json.loads(out)["meta"]["context"]["disks"]
        qd = read(f"/sys/block/{dev.name}/device/queue_depth") or \
            read(f"/sys/block/{dev.name}/mq/0/nr_tags")
        want = [{"name": dev.name, "scheduler": pick, "nr_requests": 32,
                 "rotational": read(f"/sys/block/{dev.name}/queue/rotational") == "1",
                 "queue_depth": int(qd) if qd else None}]
        check(disks == want, f"disks {disks}, sysfs {want}")
        rc, text, err = run("bio", "--disk", dev.name, "-d", "0.2", "-v")
        check(f"disks: {dev.name} (scheduler {pick}, nr_requests 32" in text, text[:600])
    rc, out, err = run("bio", "-d", "0.2", "-f", "json")
    check(rc == 0, err)
    names = [d["name"] for d in json.loads(out)["meta"]["context"]["disks"]]
    sysfs = sorted(n for n in os.listdir("/sys/block") if os.path.exists(f"/sys/block/{n}/mq")
                   and read(f"/sys/block/{n}/size") not in (None, "0"))
    check(names == sysfs[:32], f"every disk: {names}, sysfs {sysfs}")


def test_text_and_metrics_show_context():
    """-v's text says the context after the header (the default text leaves it out);
    OpenMetrics has it in the info series; --anonymize hashes the boot id."""
    rc, text, err = run("runq", "-d", "0.2", "-v")
    check(rc == 0, err)
    lines = text.splitlines()
    model, _ = expected_preempt()
    check(lines[2].startswith(f"context: preempt {model}"), lines[:4])
    check(lines[3].startswith("load: steal "), lines[:4])
    rc, text, err = run("runq", "-d", "0.2")
    check(rc == 0 and "context: " not in text, text[:400])
    rc, om, err = run("runq", "-d", "0.2", "-f", "openmetrics")
    info = next(l for l in om.splitlines() if l.startswith("lathist_runq_info{"))
    check(f'preempt="{model}"' in info and 'hypervisor="' in info and 'smt="' in info, info)
    salt = dict(os.environ, LATHIST_ANON_SALT="x" * 32)
    p = subprocess.run([LATHIST, "runq", "-d", "0.2", "-f", "json", "--anonymize"],
                       capture_output=True, text=True, env=salt)
    boot = json.loads(p.stdout)["meta"]["context"]["boot_id"]
    check(re.fullmatch(r"boot-[0-9a-f]{10}", boot), f"anonymized boot_id {boot}")


def two_runs(tmp):
    """Two real runs' documents, the second's run id and start moved so they merge."""
    paths = []
    for i in range(2):
        path = os.path.join(tmp, f"run{i}.json")
        rc, _, err = run("runq", "-d", "0.3", "-f", "json", "-o", path)
        check(rc == 0, err)
        paths.append(path)
    return paths


def edit(path, **ctx):
    with open(path) as f:
        d = json.load(f)
    d["meta"]["context"].update(ctx)
    with open(path, "w") as f:
        json.dump(d, f)
    return d


def test_report_marks_mixed_contexts():
    tmp = tempfile.mkdtemp(prefix="lathist-ctx-")
    try:
        a, b = two_runs(tmp)
        rc, out, err = run("report", "-f", "json", a, b)
        check(rc == 0 and "different contexts" not in err, err)
        ctx = json.loads(out)["meta"]["context"]
        check("mixed" not in ctx and ctx["preempt"] != "mixed", f"same host, same context: {ctx}")
        orig = json.load(open(a))["meta"]["context"]
        edit(b, preempt="rt", cmdline={"isolcpus": "1", "nohz_full": "1"})
        rc, out, err = run("report", "-f", "json", a, b)
        check(rc == 0, err)
        warn = [l for l in err.splitlines() if "different contexts" in l]
        check(len(warn) == 1 and "preempt" in warn[0] and "cmdline" in warn[0], err)
        ctx = json.loads(out)["meta"]["context"]
        check(ctx["preempt"] == "mixed" and ctx["mixed"]["preempt"] == [orig["preempt"], "rt"],
              f"{ctx}")
        check(ctx["cmdline"] == "mixed" and ctx["mixed"]["cmdline"][1] == {"isolcpus": "1",
                                                                          "nohz_full": "1"}, ctx)
        check(ctx["kernel_release"] == orig["kernel_release"], ctx)
        merged = os.path.join(tmp, "merged.json")
        with open(merged, "w") as f:
            f.write(out)
        rc, text, err = run("report", a, b)
        check("CONTEXT DIFFERS" in text and "preempt" in text, text[:800])
        # a merge merged again lists the values, not a nested "mixed"
        c = os.path.join(tmp, "c.json")
        shutil.copy(a, c)
        d = edit(c, preempt="full")
        d["meta"]["run_id"] = "f" * 32
        d["meta"]["start_realtime_ns"] += 10 * 10**9
        with open(c, "w") as f:
            json.dump(d, f)
        rc, out, err = run("report", "-f", "json", merged, c)
        check(rc == 0, err)
        vals = json.loads(out)["meta"]["context"]["mixed"]["preempt"]
        check(sorted(vals) == sorted({orig["preempt"], "rt", "full"}), f"{vals}")
        # hand-edited contexts and loads that lathist does not write: refused, naming the field
        for ctx_edit, load_edit, said in (
                ("fast machine", None, "meta.context is not an object"),
                ({"preempt": 5}, None, "meta.context.preempt is 5"),
                ({"preempt": "turbo"}, None, "meta.context.preempt is \"turbo\""),
                ({"smt": ["on"]}, None, "meta.context.smt is [\"on\"]"),
                ({"cmdline": "quiet"}, None, "meta.context.cmdline is not an object"),
                ({"cmdline": {"isolcpus": 5}}, None, "meta.context.cmdline.isolcpus is not a "
                                                     "setting"),
                ({"cmdline": {"threadirqs": False}}, None, "cmdline.threadirqs is not a setting"),
                ({"cmdline": {"foo": "bar"}}, None, "cmdline.foo is not a setting lathist"),
                ({"preempt": "mixed"}, None, "reads \"mixed\" but meta.context.mixed"),
                (None, {"steal_ratio": -0.5}, "meta.load.steal_ratio is -0.5"),
                ({"disks": "vda"}, None, "meta.context.disks is not a list"),
                ({"foo": {}}, None, "unknown field 'foo'"),
                ({"governor": "x" * 2000}, None, "meta.context.governor is 2000 bytes"),
                ({"kernel_release": "6.1.0-rt"}, None, "meta.context.kernel_release 6.1.0-rt is "
                                                       "not meta.kernel"),
                (None, {"steal_ns": -5}, "meta.load.steal_ns is -5"),
                (None, {"loadavg_1m_max": "high"}, "meta.load.loadavg_1m_max is \"high\""),
                (None, {"steal_ns": 10**12, "cpu_ns": 1}, "is more than cpu_ns"),
                (None, {"steal_ns": 0, "cpu_ns": 0, "steal_ratio": 0.0},
                 "with cpu_ns 0: a ratio of no CPU time is null"),
                (None, {"steal_ns": 10**8, "cpu_ns": 10**9, "steal_ratio": None},
                 "steal_ratio is null beside cpu_ns 1000000000")):
            with open(a) as f:
                d = json.load(f)
            if isinstance(ctx_edit, dict):
                d["meta"]["context"].update(ctx_edit)
            elif ctx_edit:
                d["meta"]["context"] = ctx_edit
            if load_edit:
                d["meta"]["load"].update(load_edit)
            with open(c, "w") as f:
                json.dump(d, f)
            rc, out, err = run("report", c)
            check(rc == 1 and said in err and len(err.splitlines()) == 1,
                  f"{ctx_edit or load_edit}: rc {rc} {err!r}")
        # two boots (or hosts) differ in boot id only: merged without a word
        with open(a) as f:
            d = json.load(f)
        d["meta"]["context"]["boot_id"] = "0" * 8 + d["meta"]["context"]["boot_id"][8:]
        d["meta"]["run_id"] = "e" * 32
        d["meta"]["start_realtime_ns"] += 20 * 10**9
        with open(c, "w") as f:
            json.dump(d, f)
        rc, text, err = run("report", a, c)
        check(rc == 0 and "CONTEXT DIFFERS" not in text and "different contexts" not in err,
              f"boot ids only: {err} {text[:400]}")
        # an input with no context (a lathist before 0.3) is left out, and said
        d["meta"].pop("context")
        d["meta"].pop("load")
        with open(c, "w") as f:
            json.dump(d, f)
        rc, out, err = run("report", "-f", "json", a, c)
        ctx = json.loads(out)["meta"]["context"]
        check(rc == 0 and "1 of the 2 inputs carry no measurement context" in err and
              ctx["inputs_without_context"] == 1 and ctx["preempt"] == orig["preempt"] and
              "mixed" not in ctx, f"{err} {ctx}")
    finally:
        shutil.rmtree(tmp)


def slot_text(lo, hi, unit_ns, unit):
    if hi is None:
        return f"({lo // unit_ns}, inf) {unit}"
    return (f"[0, {hi // unit_ns}] {unit}" if lo == 0 else f"({lo // unit_ns}, {hi // unit_ns}] "
            f"{unit}")


def percentile_slot(h, q):
    """The slot holding rank ceil(count * q / 1000), from the slots alone."""
    rank = math.ceil(h["count"] * q / 1000)
    cum = 0
    for s in h["slots"]:
        cum += s["count"]
        if cum >= rank:
            return s["lo_ns"], s.get("hi_ns")
    return None


def test_report_diff():
    """Each cell of report --diff against the same value worked out here from the two
    documents (counts, percentile slots from the slots, max); the context that differs."""
    tmp = tempfile.mkdtemp(prefix="lathist-diff-")
    try:
        paths = []
        for i, args in enumerate((["runqwork", "mix", "1", "2", "1", "300"],
                                  ["runqwork", "mix", "2", "4", "1", "300"])):
            path = os.path.join(tmp, f"{i}.json")
            wl = subprocess.Popen([os.path.join(ROOT, "build", "tests", args[0]), *args[1:]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            wl.stdout.readline()
            tool = Lathist("runq", "-f", "json", "-o", path, "--per-cpu").start()
            wl.stdin.write(b"go\n")
            wl.stdin.flush()
            wl.communicate(timeout=120)
            rc, _, err = tool.stop()
            check(rc == 0, err)
            paths.append(path)
        d = edit(paths[1], preempt="rt")
        docs = [json.load(open(p)) for p in paths]
        rc, out, err = run("report", "--diff", *paths)
        check(rc == 0, err)
        check(re.search(r"^  preempt +\"\w+\" \| \"rt\"$", out, re.M), out[:1500])
        unit = docs[0]["meta"]["hist_scheme"]["unit"]
        unit_ns = docs[0]["meta"]["hist_scheme"]["unit_ns"]
        blocks = {}
        for block in out.split("\n\n")[1:]:
            lines = block.strip().splitlines()
            if lines and lines[0].endswith(":"):
                blocks[lines[0][:-1]] = lines[2:]
        bkeys = {}
        for h in docs[1]["histograms"]:
            bkeys[(h["name"], h["key"].get("cpu"))] = h
        matched = 0
        for ha in docs[0]["histograms"]:
            hb = bkeys.get((ha["name"], ha["key"].get("cpu")))
            if not hb:
                continue
            title = f"{ha['name']}, cpu {ha['key']['cpu']}"
            check(title in blocks, f"{title} not in the diff: {list(blocks)}")
            rows = {l.split()[0]: l for l in blocks[title]}
            check(rows["count"].split()[1:3] == [str(ha["count"]), str(hb["count"])],
                  f"{title}: {rows['count']} vs {ha['count']} {hb['count']}")
            for name, q in (("p50", 500), ("p90", 900), ("p99", 990), ("p99.9", 999)):
                if not ha["count"] or not hb["count"]:
                    continue
                sa, sb = percentile_slot(ha, q), percentile_slot(hb, q)
                for s, other in ((sa, hb), (sb, ha)):
                    check(slot_text(*s, unit_ns, unit) in rows[name],
                          f"{title} {name}: {rows[name]!r} lacks {slot_text(*s, unit_ns, unit)}")
                if sa[1] and sb[1]:
                    check(rows[name].rstrip().endswith(f"x{sb[1] / sa[1]:.2f}"),
                          f"{title} {name}: {rows[name]!r}, x{sb[1] / sa[1]:.2f} expected")
            if ha["count"] and hb["count"]:
                check(f"{ha['max_ns'] / unit_ns:.3f} {unit}" in rows["max"] and
                      f"{hb['max_ns'] / unit_ns:.3f} {unit}" in rows["max"], rows["max"])
            matched += 1
        check(matched >= 2, f"{matched} histograms matched")
        rc, _, err = run("report", "--diff", paths[0])
        check(rc == 2 and "give two files" in err, f"{rc} {err}")
        rc, _, err = run("report", "--diff", "-f", "json", *paths)
        check(rc == 2 and "--diff prints text" in err, f"{rc} {err}")
        other = os.path.join(tmp, "total.json")
        rc, _, err = run("runq", "-d", "0.2", "-f", "json", "-o", other)
        rc, _, err = run("report", "--diff", paths[0], other)
        check(rc == 1 and "grouped by cpu" in err, f"{rc} {err}")
        ns = os.path.join(tmp, "ns.json")
        rc, _, err = run("runq", "-d", "0.2", "-u", "ns", "--per-cpu", "-f", "json", "-o", ns)
        rc, _, err = run("report", "--diff", paths[0], ns)
        check(rc == 1 and "slots do not line up" in err, f"{rc} {err}")
    finally:
        shutil.rmtree(tmp)
