#!/usr/bin/env bash
# The one prepared GPU check (issue 52), run from the repo root on a lent CUDA machine:
#   bash benchmarks/gpu_run.sh            # results in $OUT (default /tmp/gpu-out)
# What the machine's image lacks (gradio and its web stack, plotly, segno, redis) travels as wheels in
# .whl (see docs/speed.md, "GPU"); they are installed into /tmp/site, nothing else is touched.
# Order: CUDA equals the CPU (the tests, then gpu_check's timings), then a hall of 300 in 30 s.
set -o pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH  # py-spy for hall.py's profile
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch, transformers, gradio; print('torch', torch.__version__, 'transformers', transformers.__version__, 'gradio', gradio.__version__)"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/system/test_cuda.py 2>&1 | tee "$OUT/test_cuda.txt"
timeout 220 python3 benchmarks/hall.py --model random:vit-base-patch16-224 --device cuda --students 300 --seconds 30 \
  --json "$OUT/hall300.json" 2>&1 | tee "$OUT/hall300.txt"
# The export of a random ViT-B/16 (on 2 CPU cores ~10 min; the goal is 90 s). No Chrome there: charts stay HTML.
t0=$SECONDS
timeout 150 python3 -m vizvit export assets/examples/chelsea.jpg --model random:vit-base-patch16-224 --device cuda \
  --out /tmp/export-b16 >"$OUT/export_b16.json" 2>/tmp/export.err
echo "export: rc $?, $((SECONDS - t0)) s wall" | tee "$OUT/export_b16.txt"; tr '\r' '\n' </tmp/export.err | tail -25 >>"$OUT/export_b16.txt"
timeout 90 python3 benchmarks/gpu_check.py 2>&1 | tee "$OUT/gpu_check.txt"
