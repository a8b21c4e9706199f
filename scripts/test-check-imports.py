#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of scripts/check-imports.py: each case copies src/shoald into a
temporary folder, adds one offence, and expects the check to fail naming
it; the untouched copy must pass. Run by scripts/format-check.sh.
  scripts/test-check-imports.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CHECK = os.path.join(ROOT, "scripts", "check-imports.py")
SRC = os.path.join(ROOT, "src", "shoald")

# (name, file to append to, code appended, text the check must print)
CASES = [
    ("a direct call circle", "slices.c",
     "int slices_x(struct shoald *d);\n"
     "int slices_x(struct shoald *d)\n{\n    return state_reload(d, NULL);\n}\n",
     "call circle among"),
    ("a circle through a kept call-back", "engine.c",
     "static void cb(struct shoald *d)\n{\n    (void)d;\n}\n"
     "void cluster_x(struct shoald *d);\n"
     "void cluster_x(struct shoald *d)\n{\n    d->on_x = cb;\n}\n"
     "@@slices.c\n"
     "void slices_y(struct shoald *d);\n"
     "void slices_y(struct shoald *d)\n{\n    d->on_x(d);\n}\n",
     "called through ->on_x in slices.c"),
    ("a hook set outside shoald_setup.c", "jobs.c",
     "void jobs_x(struct shoald *d);\n"
     "void jobs_x(struct shoald *d)\n{\n    d->wake_agent = nodework_wake;\n}\n",
     "the wake_agent hook is set only in shoald_setup.c"),
    ("HTTP writing a job field", "api_jobs.c",
     "void api_x(struct job *job);\n"
     "void api_x(struct job *job)\n{\n    job->alloc[0].done = true;\n}\n",
     "HTTP changes a job or node field (job->alloc[0].done ="),
    ("HTTP writing a node field", "api_nodes.c",
     "void api_y(struct node *n);\n"
     "void api_y(struct node *n)\n{\n    n->drain++;\n}\n",
     "HTTP changes a job or node field (n->drain++"),
    ("HTTP calling the store", "api_misc.c",
     "void api_z(struct shoald *d);\n"
     "void api_z(struct shoald *d)\n{\n    store_close(d->store);\n}\n",
     "HTTP calls store_close"),
    ("HTTP calling a setter", "api_jobs.c",
     "void api_w(struct job *job);\n"
     "void api_w(struct job *job)\n{\n    job_set_reason(job, NULL);\n}\n",
     "HTTP calls job_set_reason"),
    ("a module below HTTP including it", "gate.c",
     '#include "shoald/api.h"\n',
     "gate.c includes shoald/api.h"),
    ("an include loop", "jobtab.h",
     '#include "shoald/jobs.h"\n',
     "include loop among"),
]
# A call-back given to a callee that only calls it during the call (a
# visitor) is no call up: this must pass.
FINE = [
    ("a visitor given to a lower module", "api_nodes.c",
     "static void visit(const struct job *job, int part, int gpu, int slice,\n"
     "                  void *arg)\n{\n    (void)job;\n}\n"
     "void api_v(struct shoald *d, const struct node *n);\n"
     "void api_v(struct shoald *d, const struct node *n)\n{\n"
     "    nodetab_each_gpu_part(d->nodes, d->jobs, n, visit, NULL);\n}\n"),
]


def run(folder):
    p = subprocess.run([sys.executable, CHECK, folder], capture_output=True,
                       text=True)
    return p.returncode, p.stdout + p.stderr


def with_change(tmp, name, path, code):
    """A copy of src/shoald with code appended to path ("@@FILE" lines
    start code for another file)."""
    folder = os.path.join(tmp, name.replace(" ", "_"))
    shutil.copytree(SRC, folder, ignore=shutil.ignore_patterns("test", "web"))
    for i, part in enumerate(code.split("@@")):
        if i > 0:
            path, part = part.split("\n", 1)
        with open(os.path.join(folder, path), "a", encoding="utf-8") as fh:
            fh.write("\n" + part)
    return folder


def main():
    bad = 0
    with tempfile.TemporaryDirectory(prefix="shoal-check-imports-") as tmp:
        rc, out = run(SRC)
        if rc != 0:
            print("test-check-imports: src/shoald itself fails:\n" + out,
                  file=sys.stderr)
            bad = 1
        for name, path, code, want in CASES:
            rc, out = run(with_change(tmp, name, path, code))
            if rc == 0 or want not in out:
                print(f"test-check-imports: {name}: not caught "
                      f"(rc {rc}, wanted '{want}'):\n{out}", file=sys.stderr)
                bad = 1
        for name, path, code in FINE:
            rc, out = run(with_change(tmp, name, path, code))
            if rc != 0:
                print(f"test-check-imports: {name}: refused:\n{out}",
                      file=sys.stderr)
                bad = 1
    if not bad:
        print(f"test-check-imports: {len(CASES)} offences caught, "
              f"{len(FINE)} allowed pattern passes")
    return bad


if __name__ == "__main__":
    sys.exit(main())
