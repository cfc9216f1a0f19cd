"""Code generation that the areas share, below all of them and tied to no Numba compiler.

- :mod:`.cache`: the on-disk cache of generated device code and of linked kernel images.
- :mod:`.target`: the GPU architecture code is generated for (``sm=``, ``target=``).
- :mod:`.descriptors`: libmathdx descriptors as plain data, and their LTO-IR through the cache.
- :mod:`.link`: the key of a link step and the identity of the linker and its libraries.
- :mod:`.nvrtc`: device functions compiled from CUDA C++ to LTO-IR, through the cache.
- :mod:`.launch`: NVRTC kernels compiled once per device, launched on the caller's stream.
- :mod:`.elementwise`: the strided copy and the scale kernels.

A compiler's registration (numba-cuda's in ``nvmathx.device_api``) sits on top: nothing here
imports numba, and importing this package imports none of its modules.
"""
