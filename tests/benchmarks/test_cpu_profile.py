"""benchmarks/cpu_profile.py: py-spy's collapsed stacks summed into top functions, on constructed
samples with known shares; and, where py-spy is installed, a real recording of a busy process."""

from __future__ import annotations

import subprocess
import sys

import cpu_profile
import pytest

# py-spy's collapsed stacks: frames joined by ";", then the sample count.
RAW = ("Thread._bootstrap (threading.py:1002);serve (gradio/routes.py:10);analyze (vizvit/api.py:92);"
       "forward (torch/nn/modules/linear.py:134) 6\n"
       "Thread._bootstrap (threading.py:1002);serve (gradio/routes.py:12);load_image (vizvit/model/images.py:83) 3\n"
       "Thread._bootstrap (threading.py:1002);serve (gradio/routes.py:10);analyze (vizvit/api.py:95);"
       "analyze (vizvit/api.py:99) 1\n")


def test_shares_by_self_total_and_package_are_the_sample_counts():
    p = cpu_profile.summarize(RAW, cpu_s=20.0)
    assert p.samples == 10
    self_ = {e.function: (round(e.share, 6), round(e.cpu_s, 6)) for e in p.self_top}
    assert self_ == {"forward (torch/nn/modules/linear.py)": (0.6, 12.0),
                     "load_image (vizvit/model/images.py)": (0.3, 6.0),
                     "analyze (vizvit/api.py)": (0.1, 2.0)}
    total = {e.function: round(e.share, 6) for e in p.total_top}
    # every line of a function is one function; a function twice on one stack counts once there
    assert total["serve (gradio/routes.py)"] == 1.0
    assert total["analyze (vizvit/api.py)"] == 0.7
    assert total["Thread._bootstrap (threading.py)"] == 1.0
    assert {e.function: round(e.share, 6) for e in p.packages} == {"torch": 0.6, "vizvit": 0.4}


def test_stacks_holding_a_skipped_function_are_left_out():
    p = cpu_profile.summarize(RAW, cpu_s=1.0, skip=("load_image",))
    assert p.samples == 7 and all("load_image" not in e.function for e in p.total_top)


def test_packages_of_frames():
    assert cpu_profile.package("f (/x/.venv/lib/python3.11/site-packages/PIL/Image.py)") == "PIL"
    assert cpu_profile.package("f (PIL/Image.py)") == "PIL"
    assert cpu_profile.package("wait (threading.py)") == "stdlib"
    assert cpu_profile.package("<module> (<frozen importlib._bootstrap>)") == "stdlib"
    assert cpu_profile.package("main (app.py)") == "app"


def test_the_report_names_each_line_per_student():
    text = cpu_profile.report(cpu_profile.summarize(RAW, cpu_s=20.0), per=10, per_name="student")
    assert "60.0%   12.00 (1.2000)  forward (torch/nn/modules/linear.py)" in text
    assert cpu_profile.report(cpu_profile.summarize("", cpu_s=1.0)) == "no samples"


@pytest.mark.skipif(cpu_profile.py_spy() is None, reason="py-spy not installed")
def test_a_recording_of_a_busy_process_finds_its_busy_function():
    busy = subprocess.Popen([sys.executable, "-c",
                             "import time\ndef spin_here():\n    t = time.time()\n"
                             "    while time.time() - t < 20: pass\nspin_here()"])
    try:
        rec = cpu_profile.Recorder(busy.pid).start()
        import time

        time.sleep(1.5)
        raw = rec.stop()
    finally:
        busy.kill()
    if not raw and "attach" in rec.error:
        pytest.skip(rec.error)  # no ptrace permission here
    p = cpu_profile.summarize(raw, cpu_s=1.0)
    assert p.samples > 20
    assert p.total_top[0].function.startswith("spin_here") or any(
        e.function.startswith("spin_here") and e.share > 0.9 for e in p.total_top)


def test_waiting_leaves_are_left_out_and_counted_apart():
    raw = RAW + "Thread._bootstrap (threading.py:1002);Queue.get (queue.py:171);Condition.wait (threading.py:327) 10\n"
    p = cpu_profile.summarize(raw, cpu_s=20.0)
    assert p.samples == 10 and p.waiting == 0.5
    assert {e.function: round(e.share, 6) for e in p.self_top}["forward (torch/nn/modules/linear.py)"] == 0.6
