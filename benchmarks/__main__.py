"""`python -m benchmarks [name ...]`: run every benchmark module (or the named ones) in order."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> None:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    chosen = [n for n in names if not argv or n.removeprefix("bench_") in argv or n in argv]
    for name in chosen:
        module = importlib.import_module(f"benchmarks.{name}")
        started = time.perf_counter()
        print(f"== {name}: {module.__doc__.strip().splitlines()[0] if module.__doc__ else ''}")
        module.run()
        print(f"   ({time.perf_counter() - started:.1f} s)\n", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
