#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks how the modules of src/shoald use each other
(doc/design/controller.md, HACKING.md):

1. HTTP is a leaf: only the HTTP layer (api.c, api_*.c, routes.c and
   their headers api.h, api_handlers.h), main.c and shoald_setup.c, the
   program and the one place that wires the modules' call-backs, include
   an api*.h header.
2. No include loop: with foo.c and foo.h one module (the HTTP layer one
   module too), the modules' includes of each other form no cycle.
3. No call circle: a module calls a function another module defines, or
   calls it back later through a function pointer it was given (one the
   callee keeps: a struct field set to it, or an argument the callee
   stores). These calls form no cycle either.
   The one way up is a declared hook (HOOKS below: the call-backs that
   shoald_setup.h lists, a commit's completion and a held log read's
   wake-up). A hook's target is
   set only where HOOKS says, and its calls are left out of the cycle
   check: they are the upward calls the design allows. Any other kept
   function pointer counts as an ordinary call, so a call-back cannot
   hide a circle.
4. HTTP writes no state: api*.c and routes.c call no store_* function
   and change no field of a job or a node (struct job / struct node, or
   their setters job_set_* and node_set_*); they ask the domain modules.

No exception is listed. Prints each offence and exits 1;
scripts/format-check.sh runs it.
  scripts/check-imports.py [DIR]   (default src/shoald)
"""
import os
import re
import sys

# The declared hooks: name -> (how a target is set, who may set it).
#   ("field", F): a struct field F (x->F = fn, x.F = fn, {.F = fn})
#   ("arg", FUNC): a function pointer passed to FUNC, which keeps it
# Who: a file that alone may set it, or None: any module, with its own
# function (a completion it waits for).
HOOKS = {
    "job_transition": (("field", "job_transition"), "shoald_setup.c"),
    "wake_agent": (("field", "wake_agent"), "shoald_setup.c"),
    "slices_hooks.node_changed": (("field", "node_changed"), "shoald_setup.c"),
    "slices_hooks.node_touch": (("field", "node_touch"), "shoald_setup.c"),
    "slices_hooks.job_reason": (("field", "job_reason"), "shoald_setup.c"),
    "steps node touch": (("arg", "steps_create"), "shoald_setup.c"),
    "commit reload": (("arg", "commit_create"), "shoald_setup.c"),
    "commit fenced": (("arg", "commit_on_fenced"), "shoald_setup.c"),
    "commit completion": (("arg", "commit_after"), None),
    "log wait": (("arg", "logs_wait"), None),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"shoald/([A-Za-z0-9_]+)\.h"', re.M)
IDENT = re.compile(r"\b([A-Za-z_]\w*)\b")
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "defined",
            "do", "else", "case", "goto", "alignof", "__attribute__",
            "typeof", "__typeof__"}


def module(name):
    """The module of a file stem: the HTTP layer is one module."""
    if name == "routes" or name == "api" or name.startswith("api_"):
        return "HTTP"
    return name


def is_http(f):
    return module(f[:-2]) == "HTTP"


def strip_c(text):
    """Comments, strings, characters and preprocessor lines blanked; line
    numbers kept."""
    def keep_lines(m):
        return "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", keep_lines, text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", keep_lines, text,
                  flags=re.M)
    return text


def definitions(text):
    """(name, params, body, static, line) of each function defined at the
    top level, and the top-level text outside them (initialisers)."""
    out, outside = [], []
    pos, last, n = 0, 0, len(text)
    while pos < n:
        c = text[pos]
        if c == "{":
            head = text[last:pos]
            depth, j = 0, pos
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            m = re.search(r"\b([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)"
                          r"\s*$", head)
            if m and "=" not in head and m.group(1) not in KEYWORDS:
                out.append((m.group(1), m.group(2), text[pos:j + 1],
                            re.search(r"\bstatic\b", head) is not None,
                            text.count("\n", 0, pos) + 1))
            else:
                outside.append(head + text[pos:j + 1])
            pos = last = j + 1
            continue
        if c == ";":
            outside.append(text[last:pos + 1])
            last = pos + 1
        pos += 1
    return out, "".join(outside)


def check_includes(d, files, bad):
    edges = {}
    for f in files:
        src = module(f[:-2])
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            dst = module(inc)
            if dst == "HTTP" and src not in ("HTTP", "main", "shoald_setup"):
                bad.append(f"{f} includes shoald/{inc}.h: nothing below the "
                           "HTTP layer may use it")
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, []).append(
                    f"{f} includes {inc}.h")
    for comp in cycles(edges):
        bad.append("include loop among " + ", ".join(comp) +
                   describe(edges, comp))


def cycles(edges):
    """Tarjan's strongly connected components of more than one module."""
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    nodes = set(edges)
    for v in edges.values():
        nodes.update(v)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def describe(edges, comp):
    lines = []
    for a in comp:
        for b in sorted(edges.get(a, {})):
            if b in comp:
                lines.append(f"\n    {a} -> {b}  ({'; '.join(edges[a][b][:3])})")
    return "".join(lines)


def split_args(s):
    """Top-level comma-separated arguments of a call's text."""
    args, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


def call_args(text, start):
    """The text between the parenthesis opened at start and its match."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:j]
    return ""


def check_calls(d, files, bad):
    parsed = {}
    defined = {}   # global function -> file
    statics = {}   # file -> set of static functions
    params = {}    # function -> [parameter names]
    for f in files:
        if not f.endswith(".c"):
            continue
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            text = strip_c(fh.read())
        defs, outside = definitions(text)
        parsed[f] = (defs, outside)
        for name, prm, body, static, line in defs:
            if static:
                statics.setdefault(f, set()).add(name)
            else:
                defined[name] = f
            params[name] = [
                (re.findall(r"(\w+)\s*(?:\)\s*)?(?:\([^()]*\))?\s*$", p) or
                 [""])[0] for p in split_args(prm)]

    def owner(fn, f):
        """The file defining fn as seen from file f, or None."""
        if fn in statics.get(f, ()):
            return f
        return defined.get(fn)

    # Which arguments a function keeps (stores for a later call): a
    # parameter assigned to something.
    kept = {}
    for f, (defs, _) in parsed.items():
        for name, prm, body, static, line in defs:
            for i, p in enumerate(params[name]):
                if p and re.search(r"=\s*" + re.escape(p) + r"\s*[;,}]", body):
                    kept.setdefault(name, set()).add(i)

    hook_fields = {how[1]: key for key, (how, _) in HOOKS.items()
                   if how[0] == "field"}
    hook_args = {how[1]: key for key, (how, _) in HOOKS.items()
                 if how[0] == "arg"}
    # field -> set of (target file) ; field invocations -> files
    field_targets, field_callers = {}, {}
    edges, hook_edges = {}, {}

    def edge(graph, a, b, how):
        if a != b:
            graph.setdefault(a, {}).setdefault(b, []).append(how)

    for f, (defs, outside) in parsed.items():
        units = [(name, body) for name, _, body, _, _ in defs]
        units.append(("(file scope)", outside))
        for name, body in units:
            # Direct calls.
            for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body):
                callee = m.group(1)
                src = owner(callee, f)
                if src and src != f:
                    edge(edges, module(f[:-2]), module(src[:-2]),
                         f"{f} {name} calls {callee}")
                # Functions passed to a function that keeps them.
                if callee in defined or callee in statics.get(f, ()):
                    args = split_args(call_args(body, m.end() - 1))
                    for i, a in enumerate(args):
                        a = a.lstrip("&").strip()
                        tgt = owner(a, f) if IDENT.fullmatch(a) else None
                        if not tgt or a == callee:
                            continue
                        if i not in kept.get(callee, ()):
                            continue  # a visitor, called during the call
                        keeper = owner(callee, f)
                        how = f"{f} {name} gives {a} to {callee}"
                        if callee in hook_args:
                            hook = hook_args[callee]
                            who = HOOKS[hook][1]
                            if who is None and tgt != f:
                                bad.append(f"{how}: a {hook} is the waiting "
                                           "module's own function")
                            elif who is not None and f != who:
                                bad.append(f"{how}: the {hook} hook is set "
                                           f"only in {who}")
                            edge(hook_edges, module(keeper[:-2]),
                                 module(tgt[:-2]), how)
                        else:
                            edge(edges, module(keeper[:-2]),
                                 module(tgt[:-2]), how + " (kept)")
            # Function pointers set into fields.
            for m in re.finditer(r"(?:\.|->)\s*(\w+)\s*=\s*&?\s*(\w+)\s*[;,}]",
                                 body):
                field, a = m.group(1), m.group(2)
                tgt = owner(a, f)
                if not tgt:
                    continue
                field_targets.setdefault(field, []).append(
                    (tgt, f, f"{f} {name} sets {field} = {a}"))
            # Calls through fields.
            for m in re.finditer(r"(?:\.|->)\s*(\w+)\s*\(", body):
                field_callers.setdefault(m.group(1), set()).add(f)
    for field, targets in field_targets.items():
        for tgt, setter, how in targets:
            if field in hook_fields:
                who = HOOKS[hook_fields[field]][1]
                if who is not None and setter != who:
                    bad.append(f"{how}: the {hook_fields[field]} hook is set "
                               f"only in {who}")
            for caller in sorted(field_callers.get(field, ())):
                graph = hook_edges if field in hook_fields else edges
                edge(graph, module(caller[:-2]), module(tgt[:-2]),
                     f"{how}, called through ->{field} in {caller}")
    for comp in cycles(edges):
        bad.append("call circle among " + ", ".join(comp) +
                   describe(edges, comp))
    return edges, hook_edges


def check_http_writes(d, files, bad):
    for f in files:
        if not (f.endswith(".c") and is_http(f)):
            continue
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            raw = fh.read()
        text = strip_c(raw)
        lineno = lambda pos: text.count("\n", 0, pos) + 1  # noqa: E731
        for m in re.finditer(r"\b(store_\w+|job_set_\w+|node_set_\w+)\s*\(",
                             text):
            bad.append(f"{f}:{lineno(m.start())}: HTTP calls {m.group(1)}: "
                       "ask the domain module")
        names = set(re.findall(r"\bstruct\s+(?:job|node)\s*\*\s*(?:const\s+)?"
                               r"(\w+)", text))
        names |= set(re.findall(r"\bstruct\s+(?:job|node)\s+(\w+)\s*[;=\[]",
                                text))
        if not names:
            continue
        alt = "|".join(sorted(map(re.escape, names)))
        lhs = (r"(?<![\w.>])(?:" + alt + r")\s*(?:->|\.)\s*\w+"
               r"(?:\s*\[[^\]]*\])?(?:\s*(?:\.|->)\s*\w+(?:\s*\[[^\]]*\])?)*")
        write = re.compile(r"(?:" + lhs + r")\s*(?:[-+*/|&^]?=(?!=)|\+\+|--)"
                           r"|(?:\+\+|--)\s*(?:" + lhs + r")")
        for m in write.finditer(text):
            bad.append(f"{f}:{lineno(m.start())}: HTTP changes a job or node "
                       f"field ({m.group(0).strip()}): ask jobs.c or nodes.c")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "src", "shoald")
    files = sorted(f for f in os.listdir(d)
                   if f.endswith(".c") or f.endswith(".h"))
    bad = []
    check_includes(d, files, bad)
    check_calls(d, files, bad)
    check_http_writes(d, files, bad)
    for b in bad:
        print("check-imports: " + b, file=sys.stderr)
    if bad:
        return 1
    print("check-imports: src/shoald has no include loop and no call circle; "
          "HTTP is a leaf and writes no state")
    return 0


if __name__ == "__main__":
    sys.exit(main())
