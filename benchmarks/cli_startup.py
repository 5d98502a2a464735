"""Start-up latency of the ``scenemetrics`` command: ``--help`` of every (nested) subcommand and a usage error.

Each command is run as a fresh ``python -m scenemetrics ...`` process ``--repeats`` times; the JSON gives the median
wall time per command, whether torch was imported (checked in a separate run that inspects ``sys.modules``), and two
baselines measured in the same run: a bare interpreter (``python -c pass``) and ``python -c "import torchmetrics"``
(what building the parser cost when it imported a room's metrics).

Usage:
    python benchmarks/cli_startup.py [--repeats 3] [--only demo puzzlesim]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

_CHECK = (
    "import sys\n"
    "from scenemetrics.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = sorted(m for m in ('torch', 'torchmetrics', 'torchvision', 'numpy', 'lightning') if m in sys.modules)\n"
    "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    "raise SystemExit(code)\n"
)


def help_commands() -> list[list[str]]:
    """``[]`` plus the path of every subcommand, nested ones included (read from the parser, so new ones count)."""
    from scenemetrics.cli import build_parser

    paths: list[list[str]] = [[]]

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    paths.append([*prefix, name])
                    walk(sub, [*prefix, name])

    walk(build_parser(), [])
    return paths


def _time(cmd: list[str], repeats: int, env: dict[str, str]) -> tuple[float, list[float], int]:
    times, code = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
        code = proc.returncode
    return statistics.median(times), [round(t, 4) for t in times], code


def _heavy(args: list[str], env: dict[str, str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _CHECK, *args], env=env, capture_output=True, text=True, check=False)
    for line in proc.stderr.splitlines():
        if line.startswith("HEAVY="):
            return [m for m in line[len("HEAVY=") :].split(",") if m]
    return ["<check failed: " + proc.stderr.strip()[-200:] + ">"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per command (median reported; default 3)")
    parser.add_argument("--only", nargs="+", default=None, metavar="CMD", help="only these top-level subcommands")
    opts = parser.parse_args()
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    commands = [c for c in help_commands() if opts.only is None or (c and c[0] in opts.only) or not c]
    cases = [(" ".join([*c, "--help"]), [*c, "--help"]) for c in commands]
    cases.append(("puzzlesim (usage error: missing --refs)", ["puzzlesim"]))
    bare, _, _ = _time([sys.executable, "-c", "pass"], opts.repeats, env)
    tm, _, _ = _time([sys.executable, "-c", "import torchmetrics"], opts.repeats, env)
    rows = []
    for label, args in cases:
        median, runs, code = _time([sys.executable, "-m", "scenemetrics", *args], opts.repeats, env)
        rows.append(
            {
                "command": f"scenemetrics {label}".strip(),
                "median_s": round(median, 4),
                "runs_s": runs,
                "exit_code": code,
                "heavy_imports": _heavy(args, env),
                "ratio_vs_import_torchmetrics": round(median / tm, 3),
            }
        )
    result = {
        "benchmark": "cli_startup",
        "python": platform.python_version(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "repeats": opts.repeats,
        "baseline_python_startup_s": round(bare, 4),
        "baseline_import_torchmetrics_s": round(tm, 4),
        "max_median_s": max(r["median_s"] for r in rows),
        "commands": rows,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
