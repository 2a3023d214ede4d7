"""Start `python app.py` with no arguments and a Hugging Face Space's environment, and report
(as JSON on stdout) where it listens, how long it took to answer, and what the page says.
Run inside a network namespace with loopback only (see tests/system/test_space.py): no network at all,
and port 7860 is this check's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 60.0


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))}
    env.update(SPACE_ID="someone/vizvit", SYSTEM="spaces", GRADIO_SERVER_NAME="0.0.0.0",
               GRADIO_SERVER_PORT="7860", PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    result: dict = {"answered_s": None}
    try:
        while time.perf_counter() - t0 < LIMIT_S and proc.poll() is None:
            try:
                r = httpx.get("http://127.0.0.1:7860/config", timeout=2)
                if r.status_code == 200:
                    result["answered_s"] = round(time.perf_counter() - t0, 2)
                    result["config"] = r.text
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        result["listening"] = sorted({f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process(proc.pid).net_connections()
                                      if c.status == psutil.CONN_LISTEN}) if proc.poll() is None else []
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    result["log"] = out[-6000:]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
