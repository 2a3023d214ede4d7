"""Thread policy, applied before torch is imported.

On a shared 2-vCPU machine, OpenMP's default busy-wait made a forward pass ~10×
slower whenever another process was busy; PASSIVE waiting avoids that. Both knobs
stay overridable through the environment.
"""

from __future__ import annotations

import os


def configure_threads(num_threads: int | None = None) -> int:
    """Set OMP_WAIT_POLICY=PASSIVE and a thread count (env VIZVIT_THREADS wins).

    Returns the thread count chosen. Call before `import torch`; if torch is already
    imported only its intra-op thread count is changed.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    n = int(os.environ.get("VIZVIT_THREADS") or num_threads or len(os.sched_getaffinity(0)) or 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return n
