#!/usr/bin/env python3
"""No run-configuration key read or written by name outside store/run_config.*.

The run configuration (`runs.config`) is typed: src/pipette/store/run_config.{h,cc} holds every
key name, and everything else reads and writes it through the structs, RecordedConfig and RunKey.
This check finds the old way back in: a JSON object whose name says it is a configuration
(`config`, `cfg`, `run_config`, ...) indexed, searched or read with a string literal that is one
of run_config.cc's keys. Usage: check_run_config_keys.py ROOT... (folders or files); prints each
offence as FILE:LINE and exits 1 when there is any.
"""
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
RUN_CONFIG = HERE.parent / "src" / "pipette" / "store" / "run_config.cc"

# Keys as run_config.cc writes and reads them: json["key"], Read(json, "key", ...), ReadObject(...).
KEY_USE = re.compile(r'(?:\[\s*"([a-z_A-Z]+)"\s*\]|Read(?:Object)?\(\s*\w+\s*,\s*"([a-z_A-Z]+)")')
# A configuration-named JSON value used with a string literal.
ACCESS = re.compile(
    r'\b(\w*(?:config|cfg)\w*)\s*(?:\[\s*|\.\s*(?:value|contains|find|at|erase)\s*\(\s*)"([^"]+)"',
    re.IGNORECASE)


def run_config_keys(path):
    keys = set()
    for match in KEY_USE.finditer(path.read_text()):
        keys.add(match.group(1) or match.group(2))
    return keys


def sources(roots):
    for root in roots:
        path = pathlib.Path(root)
        if path.is_file():
            yield path
            continue
        for f in sorted(path.rglob("*")):
            if f.suffix in (".cc", ".h") and f.stem != "run_config":
                yield f


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    keys = run_config_keys(RUN_CONFIG)
    offences = 0
    for f in sources(argv):
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for match in ACCESS.finditer(line):
                if match.group(2) in keys:
                    print(f"{f}:{n}: run-configuration key '{match.group(2)}' used by name on "
                          f"'{match.group(1)}' (use store/run_config.h)")
                    offences += 1
    return 1 if offences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
