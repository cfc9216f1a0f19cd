"""The cuFFT engine that ``nvmathx.fft`` and ``nvmathx.distributed.fft`` both run on.

- :mod:`.layout`: how a transform over any axes and strides becomes cuFFT executions (pure).
- :mod:`.plan`: the cuFFT plans of a layout, their workspace, and their execution.
- :mod:`.normalize`: the ``norm`` and ``direction`` arguments.
- :mod:`.callbacks`, :mod:`.callback_codegen`, :mod:`.callback_errors`, :mod:`.scale_callback`:
  load and store callbacks compiled to LTO-IR, and how plans take them.

Importing this package imports none of its modules.
"""
