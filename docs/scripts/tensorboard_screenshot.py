"""A screenshot of TensorBoard's custom-scalars page for a results folder (docs/tensorboard.md).

Starts ``tensorboard`` on ``--logdir`` (a local port), waits until it serves the trials'
privacy layout, has headless Chromium save ``http://127.0.0.1:PORT/#custom_scalars`` as a
PNG, and stops TensorBoard. Chromium comes from the system's packages (Debian:
``apt-get install chromium``); ``--browser`` names another binary.

    rllib train -f tuned_configs/ldp_a3c.yaml --storage-path /tmp/qs
    python docs/scripts/tensorboard_screenshot.py --logdir /tmp/qs/ldp-a3c-privunitg \
        --output docs/assets/tensorboard_privacy.png
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def tensorboard(logdir: Path, port: int) -> Iterator[str]:
    """Runs ``tensorboard --logdir LOGDIR`` on ``port`` while the block runs; yields its URL."""
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--reload_interval", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_for_layout(url: str, timeout_s: float) -> dict:
    """Polls the custom-scalars plugin until it serves a layout; returns it.

    Raises:
        TimeoutError: If no layout is served within ``timeout_s`` seconds (no trial written by
            ``rllib train`` under the logdir, or TensorBoard did not start).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/data/plugin/custom_scalars/layout") as reply:
                layout = json.loads(reply.read() or b"{}")
            if layout.get("category"):
                return layout
        except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
            pass  # Not up yet, or still reading the event files.
        time.sleep(1.0)
    raise TimeoutError(f"TensorBoard at {url} served no custom-scalars layout in {timeout_s} s")


def screenshot(browser: str, url: str, output: Path, window_size: str, wait_ms: int) -> None:
    """Headless ``browser`` saves ``url`` as the PNG ``output``.

    ``--virtual-time-budget`` lets the page fetch and draw its charts before the capture;
    ``--no-sandbox`` because Chromium's sandbox refuses to run as root (containers, CI).
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={window_size}",
        f"--virtual-time-budget={wait_ms}",
        f"--screenshot={output.resolve()}",
        url,
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments, takes the screenshot, prints where it is."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", type=Path, required=True, help="an experiment's folder")
    parser.add_argument("--output", type=Path, default=Path("tensorboard_privacy.png"))
    parser.add_argument("--window-size", default="1400,1100", help="WIDTH,HEIGHT in pixels")
    parser.add_argument("--wait-ms", type=int, default=15000, help="page time before capture")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for TB")
    parser.add_argument("--browser", help=f"Chromium binary (default: first of {BROWSERS})")
    args = parser.parse_args(argv)

    browser = args.browser or next(filter(None, map(shutil.which, BROWSERS)), None)
    if browser is None:
        parser.error("no Chromium found: install it (Debian: apt-get install chromium)")
    if not args.logdir.is_dir():
        parser.error(f"--logdir {args.logdir}: not a folder")
    with tensorboard(args.logdir, free_port()) as url:
        layout = wait_for_layout(url, args.timeout)
        screenshot(browser, f"{url}/#custom_scalars", args.output, args.window_size, args.wait_ms)
    categories = [c["title"] for c in layout["category"]]
    print(f"{args.output}: custom scalars of {args.logdir} (categories {categories})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
