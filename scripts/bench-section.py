#!/usr/bin/env python3
"""Writes one area's section of BENCHMARKS.md between the markers its script owns.

    scripts/bench-section.py NAME WRITER [--report FILE] < section.md
        Replaces everything between "<!-- NAME:begin…" and "<!-- NAME:end -->" (the markers
        included) with the section read from standard input, framed by
        "<!-- NAME:begin: written by WRITER; edit outside these markers -->" and
        "<!-- NAME:end -->". When the file has no such markers yet, the section is appended.
        The rest of the file is kept as it is. --report FILE: another file than BENCHMARKS.md
        (`none`: write nothing).
    scripts/bench-section.py --machine
        Prints the machine line every section ends with: cores, CPU model, RAM, kernel.

Every section has the same shape: "## Area", one table of the current figures, then the lines
"Reference:", "Command:", "Machine:" (and a few notes at most). A rerun of the script replaces its
section wholly; earlier figures are in `git log -p BENCHMARKS.md`. The SQLite weekly run's markers
are `bench` with the writer "`make bench` (scripts/bench.sh)", the same strings as
Benchmarks/Sources/digest-bench/Report.swift writes, so either writer replaces the other's section.
"""
import os
import platform
import re
import sys


def machine():
    cores = os.cpu_count()
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1048576:.0f} GiB RAM"
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    parts = [f"{cores} cores", model, ram, f"Linux {platform.release()}", f"load average {load} when written"]
    return ", ".join(p for p in parts if p)


def replace(name, writer, section, path):
    begin = f"<!-- {name}:begin: written by {writer}; edit outside these markers -->"
    end = f"<!-- {name}:end -->"
    block = f"{begin}\n{section.strip()}\n{end}\n"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    pattern = re.compile(r"^<!-- " + re.escape(name) + r":begin.*?^<!-- " + re.escape(name) + r":end -->\n?", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda m: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main(argv):
    if argv[1:] == ["--machine"]:
        print(machine())
        return 0
    args = argv[1:]
    path = "BENCHMARKS.md"
    if "--report" in args:
        i = args.index("--report")
        path = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    if path == "none":
        return 0
    replace(args[0], args[1], sys.stdin.read(), path)
    print(f"{path}: section {args[0]} written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
