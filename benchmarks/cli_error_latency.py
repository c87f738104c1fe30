"""How long `rllib train` takes to report bad input (the checks before Ray).

Runs `python -m rllib_privacy.cli train ...` REPEATS times per case in a fresh interpreter
and prints the median wall time; `--help` is the floor. Light: about 5 s per case on an idle
machine. Usage: `python benchmarks/cli_error_latency.py [--repeats 5]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text("x:\n  run: LDPA3C\n  config: {privacy_epsilonn: 1.0}\n")
        value = Path(tmp) / "value.yaml"
        value.write_text("x:\n  run: LDPA3C\n  config: {privacy_epsilon: abc}\n")
        # Right kind, refused by the config class: the table's probed rules.
        negative = Path(tmp) / "negative.yaml"
        negative.write_text("x:\n  run: LDPA3C\n  config: {privacy_epsilon: -1}\n")
        mechanism = Path(tmp) / "mechanism.yaml"
        mechanism.write_text("x:\n  run: LDPA3C\n  config: {privacy_mechanism: laplase}\n")
        cases = {
            "--help": ["--help"],
            "missing file": ["train", "-f", str(Path(tmp) / "missing.yaml")],
            "unknown key": ["train", "-f", str(bad)],
            "bad value": ["train", "-f", str(value)],
            "negative epsilon": ["train", "-f", str(negative)],
            "unknown mechanism": ["train", "-f", str(mechanism)],
            "unwritable storage": [
                "train",
                "-f",
                str(REPO / "tuned_configs/ldp_a3c.yaml"),
                "--storage-path",
                "/proc/x",
            ],
        }
        for name, argv in cases.items():
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "rllib_privacy.cli", *argv],
                    capture_output=True,
                    check=False,
                )
                times.append(time.perf_counter() - start)
            print(f"{name:20s} median {statistics.median(times):.2f} s (max {max(times):.2f} s)")


if __name__ == "__main__":
    main()
