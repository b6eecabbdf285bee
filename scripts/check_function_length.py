#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 80 lines, head to closing brace).

Usage: check_function_length.py [--max N] DIR_OR_FILE...

A function may be longer where its head is preceded by a comment line containing
`NOLINTNEXTLINE(readability-function-size)` followed by the reason (the marker clang-tidy's own
check honours). Lambdas and local classes count towards the function that holds them. Exits 1
when any function is too long, naming file:line, the function and its length; 0 otherwise.

The scan is lexical: comments, string and character literals are blanked, then braces are matched.
A brace opens a function body when it is not inside another function body and the text before it
(since the previous `;`, `{` or `}`) has a parameter list and is not a namespace, class, struct,
union, enum or an initialiser.
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cc", ".h", ".cpp", ".hpp", ".cu", ".cuh")
MARKER = "NOLINTNEXTLINE(readability-function-size)"
# A constructor's member initialiser list: `) :` (not `::`), possibly after noexcept.
INIT_LIST = re.compile(r"\)\s*(noexcept\s*)?:(?!:)")
NOT_A_FUNCTION = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b|"
                            r"^\s*extern\s+\"C\"")


def blank_literals(text):
    """Returns text with comments and string/char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """Yields (head_line, end_line, name) for every function body in the file at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    text = blank_literals(raw)
    # Preprocessor lines are not code for this purpose.
    text = re.sub(r"(?m)^[ \t]*#.*(\\\n.*)*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    stack = []  # per open brace: True if it is a function body (or inside one)
    head_start = 0
    line_of = []
    line = 1
    for ch in text:
        line_of.append(line)
        if ch == "\n":
            line += 1
    open_at = []
    for i, ch in enumerate(text):
        if ch == "{":
            in_function = any(stack)
            is_function = False
            if not in_function:
                head = text[head_start:i]
                flat = " ".join(head.split())
                if INIT_LIST.search(flat) and i > 0 and re.match(r"[\w>]", text[i - 1]):
                    # A member initialiser `a_{x}` in a constructor's init list: part of the head.
                    stack.append(False)
                    open_at.append((i, None, False))
                    continue
                if ("(" in flat and ")" in flat and not NOT_A_FUNCTION.search(flat)
                        and not re.search(r"=\s*$", flat) and not flat.endswith(",")):
                    is_function = True
            stack.append(is_function or in_function)
            open_at.append((i, head_start, is_function))
            head_start = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
                start, head, is_function = open_at.pop()
                if head is None:  # the end of a member initialiser: the head goes on
                    continue
                if is_function:
                    head_text = text[head:start]
                    first = head + (len(head_text) - len(head_text.lstrip()))
                    m = re.search(r"([~\w:]+)\s*\(", " ".join(head_text.split()))
                    yield line_of[first], line_of[i], (m.group(1) if m else "?")
            head_start = i + 1
        elif ch == ";":
            if not any(stack):
                head_start = i + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith(SOURCE_SUFFIXES)]
        else:
            files.append(p)
    too_long = 0
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for first, last, name in functions(path):
            length = last - first + 1
            if length <= args.max:
                continue
            before = lines[max(0, first - 4):first - 1]
            if any(MARKER in line for line in before):
                continue
            print(f"{path}:{first}: {name} is {length} lines (limit {args.max}; a longer one needs "
                  f"a '// {MARKER}: why' comment above it)")
            too_long += 1
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
