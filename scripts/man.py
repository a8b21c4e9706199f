#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Builds a man page: the scdoc source TEMPLATE with @HELP@ replaced by the
# options of `PROGRAM --help` (so the page never misses an option), and
# @COMMANDS@ by each command's --help for a program of subcommands (shoal),
# run through scdoc into OUTPUT.
#   man.py TEMPLATE PROGRAM OUTPUT
import re
import subprocess
import sys


def literal(text):
    # scdoc's literal block; lines indented by a tab are kept as they are.
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    return "```\n" + "\n".join(lines) + "\n```\n"


def help_of(program, *args):
    out = subprocess.run([program, *args, "--help"], capture_output=True,
                         text=True, check=False)
    return out.stdout or out.stderr


def main():
    template, program, output = sys.argv[1:4]
    text = open(template, encoding="utf-8").read()
    if "@HELP@" in text:
        body = help_of(program)
        # Keep the options: from the first option line on.
        lines = body.split("\n")
        start = next(i for i, l in enumerate(lines) if l.startswith("  -"))
        text = text.replace("@HELP@", literal("\n".join(lines[start:])))
    if "@COMMANDS@" in text:
        body = help_of(program)
        names = re.findall(r"^  ([a-z][a-z-]*) ", body, re.M)
        parts = []
        for name in names:
            parts.append("## shoal %s\n\n%s" % (name, literal(help_of(program, name))))
        text = text.replace("@COMMANDS@", "\n".join(parts))
    page = subprocess.run(["scdoc"], input=text, capture_output=True,
                          text=True, check=False)
    if page.returncode != 0:
        sys.stderr.write("man.py: scdoc on %s: %s" % (template, page.stderr))
        return 1
    open(output, "w", encoding="utf-8").write(page.stdout)
    return 0


sys.exit(main())
