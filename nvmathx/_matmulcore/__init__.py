"""What ``nvmathx.linalg`` and ``nvmathx.distributed.linalg`` both define a matmul by.

- :mod:`.epilogs`: the epilogs, what each computes and consumes, their auxiliary outputs' names
  and formats, and their cuBLASLt codes.
- :mod:`.scalars`: ``alpha`` and ``beta``.

Importing this package imports none of its modules.
"""
