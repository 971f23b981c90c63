"""The documentation's links and the scripts it names still point somewhere: every relative
Markdown link `[text](path#anchor)` in the tree's .md files reaches a file (and, for a .md
target, a heading with that anchor), and every shell script under scripts/ named in the docs,
scripts, tests, sources and CMake files exists. Files moved without their references fail here.
bench/results/ is left out: raw results quote the commands as they were run.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP_DIRS = {".git", "results", "__pycache__"}
TEXT = (".md", ".sh", ".py", ".c", ".h", ".cu", ".cuh", ".cpp", ".txt", ".in", ".lmp")


def tree_files():
    for d, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(d, ROOT)
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith((".", "build"))
                   and not (rel == "bench" and x == "results")]
        for f in files:
            if f.endswith(TEXT) or f == "CMakeLists.txt" or f.startswith("in."):
                yield os.path.join(d, f)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens"""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    found, in_code = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#+\s+(.*)", line)
        if m:
            found.add(slug(m.group(1)))
    return found


def check_links(md, failures):
    text = re.sub(r"```.*?```", "", open(md, encoding="utf-8").read(), flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        where = os.path.relpath(md, ROOT)
        if not os.path.exists(full):
            failures.append(f"{where}: link to {target}: no such file")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            failures.append(f"{where}: link to {target}: no heading with that anchor")


def check_scripts(path, failures):
    text = open(path, encoding="utf-8", errors="replace").read()
    for name in sorted(set(re.findall(r"\bscripts/[\w./-]+\.sh\b", text))):
        if not os.path.exists(os.path.join(ROOT, name)):
            failures.append(f"{os.path.relpath(path, ROOT)}: names {name}, which does not exist")


def main():
    failures, n = [], 0
    for path in tree_files():
        n += 1
        if path.endswith(".md"):
            check_links(path, failures)
        check_scripts(path, failures)
    for f in failures:
        print("FAIL:", f)
    print(f"{n} files checked, {len(failures)} broken reference(s)")
    sys.exit(1 if failures or n == 0 else 0)


if __name__ == "__main__":
    main()
