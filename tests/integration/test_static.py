"""make static: one binary that runs where no package is installed (an empty chroot with
only /proc and /sys), and counts what the dynamic one counts."""
import json
import os
import shutil
import subprocess
import tempfile

from lh import ROOT, Workload, check
from test_runq import CPU, LossBudget

STATIC = os.path.join(ROOT, "build", "lathist-static")


def test_static_binary_in_empty_chroot():
    p = subprocess.run(["ldd", STATIC], capture_output=True, text=True)
    check("not a dynamic executable" in p.stdout + p.stderr, f"ldd: {p.stdout}{p.stderr}")
    root = tempfile.mkdtemp()
    mounted = []
    try:
        for d in ("proc", "sys", "dev"):
            os.makedirs(os.path.join(root, d))
            subprocess.run(["mount", "--rbind", f"/{d}", os.path.join(root, d)], check=True)
            mounted.append(os.path.join(root, d))
        shutil.copy(STATIC, os.path.join(root, "lathist"))
        os.makedirs(os.path.join(root, "tmp"))
        work = Workload("mix", CPU, 2, 1, 500)
        pid = work.start()
        tool = subprocess.Popen(["chroot", root, "/lathist", "runq", "-f", "json", "-o",
                                 "/tmp/out.json", "--per-thread", "-p", str(pid)],
                                stderr=subprocess.PIPE, text=True)
        line = tool.stderr.readline()
        check(line.startswith("Tracing"), f"static lathist in a chroot said {line!r}")
        work.go()
        rows = work.wait()
        tool.send_signal(2)
        _, err = tool.communicate(timeout=60)
        check(tool.returncode == 0, err)
        with open(os.path.join(root, "tmp", "out.json")) as f:
            doc = json.load(f)
        counts = {}
        for h in doc["histograms"]:
            counts[h["key"]["tid"]] = counts.get(h["key"]["tid"], 0) + h["count"]
        budget = LossBudget(doc)
        for r in rows:
            budget.check(counts.get(r["tid"], 0), r["pcount"], f"tid {r['tid']} (static)")
    finally:
        for m in reversed(mounted):
            subprocess.run(["umount", "-R", m])
        shutil.rmtree(root, ignore_errors=True)


def test_install_binary_and_man_pages():
    """make install DESTDIR=... puts the binary and one man page per verb (made from each
    verb's own -h -v by help2man and its docs page by go-md2man) in place; every page
    renders with man -l, names its verb, lists the verb's options and holds its docs."""
    with tempfile.TemporaryDirectory() as dest:
        p = subprocess.run(["make", "-C", ROOT, "--no-print-directory", "install",
                            f"DESTDIR={dest}", "PREFIX=/usr"], capture_output=True, text=True)
        check(p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:])
        binary = os.path.join(dest, "usr", "sbin", "lathist")
        check(os.access(binary, os.X_OK), "no binary installed")
        with open(os.path.join(dest, "usr", "lib", "systemd", "system", "lathist.service")) as f:
            unit = f.read()
        check("ExecStart=/usr/sbin/lathist serve" in unit, "the unit's ExecStart is not the "
                                                          "installed binary")
        with open(os.path.join(dest, "usr", "share", "lathist", "grafana-lathist.json")) as f:
            check(json.load(f)["panels"], "no dashboard installed")
        mandir = os.path.join(dest, "usr", "share", "man", "man8")
        pages = {"lathist.8": "runq", "lathist-runq.8": "--per-thread",
                 "lathist-bio.8": "--per-disk", "lathist-report.8": "--heatmap",
                 "lathist-serve.8": "--max-series", "lathist-doctor.8": "-f"}
        check(sorted(os.listdir(mandir)) == sorted(pages), f"pages {os.listdir(mandir)}")
        # each verb's page also holds its docs/VERB.md, lathist.8 how to read the output
        # and every loss class, the runq and bio pages their counters (-h -v)
        sections = {"lathist.8": ["SHOULD I WORRY?", "missed_switch_in", "ringbuf_drop"],
                    "lathist-runq.8": ["WHAT IS MEASURED", "LOSS: ", "missed_switch_in"],
                    "lathist-bio.8": ["COMPARED WITH FIO", "LOSS: ", "missed_completion"],
                    "lathist-report.8": ["--diff"], "lathist-serve.8": ["BOUNDED CARDINALITY"],
                    "lathist-doctor.8": ["doctor"]}
        for page, option in pages.items():
            p = subprocess.run(["man", "-l", os.path.join(mandir, page)], capture_output=True,
                               text=True, env=dict(os.environ, MANWIDTH="100", LANG="C"))
            name = page[:-2].upper()
            check(p.returncode == 0 and p.stdout.lstrip().startswith(f"{name}(8)") and
                  option in p.stdout, f"{page}: rc {p.returncode}, {p.stdout[:300]!r}")
            for needle in sections[page]:
                check(needle in p.stdout, f"{page}: no {needle!r}")
            check("???" not in p.stdout, f"{page}: bytes man cannot show: "
                                         f"{p.stdout[max(0, p.stdout.find('???') - 60):][:120]!r}")
