"""The front page, the reference pages and -h, read as a newcomer reads them: README.md is a
front page (at most ~300 lines), every link in it and in docs/ leads somewhere, the loss
classes page names every class the binary counts, prose lines and table cells stay short,
and each verb's -h is a synopsis that fits a screen (the counter glossary only with -v)."""
import glob
import os
import re
import subprocess

from lh import LATHIST, ROOT, check

PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]
VERBS = ("runq", "bio", "report", "serve", "doctor")


def read(path):
    with open(path) as f:
        return f.read()


def prose(text):
    """The lines of a Markdown text outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def test_readme_is_a_front_page():
    """README.md: at most 300 lines, the two quick-start commands, a link to each
    reference page that answers a newcomer's first questions."""
    text = read(os.path.join(ROOT, "README.md"))
    check(len(text.splitlines()) <= 300, f"README.md has {len(text.splitlines())} lines")
    for needle in ("make run", "make check", "docs/output.md", "docs/losses.md",
                   "docs/performance.md", "docs/runq.md", "docs/bio.md"):
        check(needle in text, f"README.md does not mention {needle}")


def test_links_lead_somewhere():
    """Every relative link of README.md and docs/*.md names a file that exists, and a
    #fragment one of its headings."""
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", read(page)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            check(os.path.exists(full), f"{os.path.relpath(page, ROOT)}: link {target!r}: "
                                        f"no {os.path.relpath(full, ROOT)}")
            if frag and full.endswith(".md"):
                slugs = {re.sub(r"[^a-z0-9 _-]", "", h.lower()).strip().replace(" ", "-")
                         for h in re.findall(r"^#+ (.*)$", read(full), re.M)}
                check(frag in slugs, f"{os.path.relpath(page, ROOT)}: link {target!r}: no "
                                     f"heading {frag!r} in {sorted(slugs)}")


def test_lines_and_cells_are_short():
    """No prose line over 300 characters, no table cell over 200 (code blocks are the
    program's own output and may be wide)."""
    for page in PAGES:
        for n, line in enumerate(prose(read(page)), 1):
            name = os.path.relpath(page, ROOT)
            check(len(line) <= 300, f"{name}: a line of {len(line)} characters: {line[:80]!r}")
            if line.startswith("|"):
                for cell in line.strip("|").split("|"):
                    check(len(cell) <= 200, f"{name}: a table cell of {len(cell)} characters: "
                                            f"{cell[:80]!r}")


def test_losses_page_names_every_class():
    """docs/losses.md names every counter runq or bio has, as -h -v lists them."""
    text = read(os.path.join(ROOT, "docs", "losses.md"))
    names = set()
    for verb in ("runq", "bio"):
        p = subprocess.run([LATHIST, verb, "-h", "-v"], capture_output=True, text=True)
        check(p.returncode == 0, p.stderr)
        on = False
        for line in p.stdout.splitlines():
            if line.startswith("Events, losses and kernel gaps"):
                on = True
            elif on and re.match(r"  [a-z_]+ ", line):
                names.add(line.split()[0])
    check(len(names) >= 40, f"only {len(names)} classes in -h -v: {sorted(names)}")
    missing = sorted(n for n in names if not re.search(rf"\b{n}\b", text))
    check(not missing, f"docs/losses.md does not name {missing}")


def test_help_is_a_synopsis():
    """Each verb's -h fits a screen (at most 50 lines, none over 100 columns) and lists
    its options; the counter glossary comes only with -v, whichever comes first; -h
    wins over any option after it."""
    for verb in VERBS:
        p = subprocess.run([LATHIST, verb, "-h"], capture_output=True, text=True)
        lines = p.stdout.splitlines()
        check(p.returncode == 0 and lines[0].startswith(f"Usage: lathist {verb}"),
              f"{verb} -h: rc {p.returncode}, {p.stdout[:200]!r}")
        check(len(lines) <= 50, f"{verb} -h: {len(lines)} lines")
        check(all(len(line) <= 100 for line in lines),
              f"{verb} -h: a line over 100 columns: {max(lines, key=len)!r}")
        check("LOSS:" not in p.stdout, f"{verb} -h prints the glossary without -v")
    for args in (["-h", "-v"], ["-v", "-h"]):
        p = subprocess.run([LATHIST, "runq", *args], capture_output=True, text=True)
        check(p.returncode == 0 and "LOSS: " in p.stdout and "missed_switch_in" in p.stdout,
              f"runq {' '.join(args)}: no glossary: {p.stdout[-300:]!r}")
    # -h wins over what follows it, good or bad; what comes before it is read as usual
    for args in (["runq", "-h", "--bogus"], ["runq", "-h", "-p", "999999999"],
                 ["bio", "-h", "--disk", "nosuchdisk0"], ["report", "-h", "-f", "bogus"]):
        p = subprocess.run([LATHIST, *args], capture_output=True, text=True)
        check(p.returncode == 0 and p.stdout.startswith(f"Usage: lathist {args[0]}") and
              not p.stderr, f"{args}: rc {p.returncode}, {p.stderr!r}")
    p = subprocess.run([LATHIST, "runq", "--bogus", "-h"], capture_output=True, text=True)
    check(p.returncode == 2 and "--bogus" in p.stderr, f"--bogus -h: rc {p.returncode}")
    p = subprocess.run([LATHIST, "bio", "-h", "-v"], capture_output=True, text=True)
    check("missed_completion" in p.stdout and "switch-in" not in p.stdout and
          "missed_switch_in" not in p.stdout, f"bio -h -v speaks of runq: {p.stdout[-600:]!r}")
