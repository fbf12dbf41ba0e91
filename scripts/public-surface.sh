#!/usr/bin/env bash
# The package's public surface, per target, against the budget in scripts/public-surface.txt.
#
# What it counts: in Sources/<target>/**/*.swift, the declarations written with `public` or `open`
# access — one per line whose declaration starts (after attributes such as `@inlinable` or
# `@_spi(Name)`, and modifiers such as `final`, `static`, `nonisolated`) with `public` or `open`
# followed by the rest of a declaration: types, extensions, functions, initializers, properties,
# subscripts, typealiases, enum cases of a `public case` line. Not counted: `public import` lines,
# lines inside comments and multi-line string literals, and members a `public extension` makes
# public without saying so (the extension itself counts once). Declarations under `@_spi(...)` count
# like the others (their number is shown apart): they are public to whoever imports the SPI.
#
# It fails when
#   - a target that is not a library product (Package.swift's `.library(name:targets:)`) has any
#     public declaration, unless scripts/public-surface.txt lists it as a `non-product` exception;
#   - a library product's target has more than its budget in scripts/public-surface.txt, or none.
#
# Usage: scripts/public-surface.sh [--quiet]   (make test runs it before the Swift tests)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import pathlib, re, sys

quiet = "--quiet" in sys.argv[1:]
root = pathlib.Path(".")

# Library products' targets, from Package.swift.
manifest = (root / "Package.swift").read_text()
product_targets = set()
for m in re.finditer(r'\.library\(\s*name:\s*"[^"]+"\s*,\s*(?:type:\s*\.\w+\s*,\s*)?targets:\s*\[([^\]]*)\]', manifest):
    product_targets.update(re.findall(r'"([^"]+)"', m.group(1)))

# The budget: `Target count` lines, `Target count non-product` for a listed exception; `#` comments.
budget, exceptions = {}, set()
for number, line in enumerate((root / "scripts/public-surface.txt").read_text().splitlines(), 1):
    line = line.split("#", 1)[0].split()
    if not line:
        continue
    if len(line) not in (2, 3) or not line[1].isdigit() or (len(line) == 3 and line[2] != "non-product"):
        sys.exit(f"scripts/public-surface.txt:{number}: expected `Target count` or `Target count non-product`")
    budget[line[0]] = int(line[1])
    if len(line) == 3:
        exceptions.add(line[0])

MODIFIERS = r"(?:final|nonisolated|static|class|override|mutating|nonmutating|indirect|convenience|required|dynamic|lazy|weak|unowned|distributed|consuming|borrowing|prefix|postfix|infix)"
DECLARATION = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^()]*\))?\s+)*(?:" + MODIFIERS + r"\s+)*(public|open)\s+(?!import\b)[@\w]")
SPI = re.compile(r"^\s*(?:@[\w.]+(?:\([^()]*\))?\s+)*@_spi\(")
ATTRIBUTES_ONLY = re.compile(r"\s*(?:@[\w.]+(?:\([^()]*\))?\s*)+")


def count(directory):
    """(declarations, of which @_spi) in the Swift files under `directory`."""
    total = spi = 0
    for path in sorted(directory.rglob("*.swift")):
        in_block = 0        # depth of /* */ comments
        in_string = False   # inside a """ literal
        pending_spi = False  # an @_spi(...) attribute alone on the line before
        for line in path.read_text(errors="replace").splitlines():
            if in_string:
                if line.count('"""') % 2 == 1:
                    in_string = False
                continue
            if in_block:
                in_block += line.count("/*") - line.count("*/")
                continue
            stripped = line.strip()
            if stripped.startswith("//"):
                continue
            if stripped.startswith("/*"):
                in_block = line.count("/*") - line.count("*/")
                continue
            code = line.split("//", 1)[0]
            if DECLARATION.match(line):
                total += 1
                if pending_spi or SPI.match(line):
                    spi += 1
            # An attribute on a line of its own (`@_spi(Benchmarks)` above `public func`) carries over.
            if ATTRIBUTES_ONLY.fullmatch(code):
                pending_spi = pending_spi or "@_spi(" in code
            else:
                pending_spi = False
            if code.count('"""') % 2 == 1:
                in_string = True
                continue
            outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', code)
            in_block = max(0, outside_strings.count("/*") - outside_strings.count("*/"))
    return total, spi


failures = []
rows = []
for directory in sorted(p for p in (root / "Sources").iterdir() if p.is_dir()):
    target = directory.name
    total, spi = count(directory)
    product = target in product_targets
    limit = budget.get(target)
    status = "ok"
    if product:
        if limit is None:
            status = "FAIL: a library product's target without a budget"
        elif total > limit:
            status = f"FAIL: over its budget of {limit}"
    elif total > 0:
        if target in exceptions:
            status = "ok (listed exception: not a product, public for now)"
            if total > limit:
                status = f"FAIL: over its budget of {limit}"
        else:
            status = "FAIL: not a library product, yet public"
    if status.startswith("FAIL"):
        failures.append(f"{target}: {total} public declarations — {status[6:]}")
    rows.append((target, total, spi, limit, product, status))

for name in sorted(set(budget) - {r[0] for r in rows}):
    failures.append(f"scripts/public-surface.txt lists {name}, which is not a target under Sources/")

if not quiet or failures:
    print(f"{'target':<20} {'public':>6} {'(spi)':>6} {'budget':>6}  product")
    for target, total, spi, limit, product, status in rows:
        if total or limit is not None or product:
            print(f"{target:<20} {total:>6} {spi or '':>6} {'' if limit is None else limit:>6}  "
                  f"{'library' if product else '-':<7}  {status}")
    in_products = sum(r[1] for r in rows if r[4])
    print(f"total: {sum(r[1] for r in rows)} public declarations, {in_products} in library products' targets")
sys.stdout.flush()
if failures:
    print("public-surface: " + "; ".join(failures), file=sys.stderr)
    sys.exit(1)
PY
