"""Generate the code of many descriptors in parallel processes before a GPU test module runs.

libmathdx spends seconds of one CPU core per descriptor; the GPU machine has many cores.
"""

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context


def warm(objects_and_forms):
    """``objects_and_forms``: (FFT or Matmul, call form or None) pairs; fills the shared cache."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Under pytest-xdist the workers already share the tests (and the cores): a pool per
        # worker would generate every descriptor once per worker, many times over.
        return
    from nvmathx._codegen.descriptors import generate_into
    from nvmathx.device_api import cache_dir

    root = os.path.dirname(cache_dir())
    jobs = [(obj.descriptor(form) if form else obj.descriptor(), obj.target) for obj, form in objects_and_forms]
    workers = max(1, min(len(jobs), (os.cpu_count() or 2) - 1))
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for future in [pool.submit(generate_into, root, d, t) for d, t in jobs]:
            future.result()
