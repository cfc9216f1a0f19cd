"""Float8 training of the layers: the recipe (:mod:`.recipe`), the scaling state (:mod:`.state`),
the cast / transpose / amax kernels (:mod:`.kernels`), the float8 passes over cuBLASLt
(:mod:`.gemms`), their custom ops and autograd (:mod:`.ops`) and the choice of float8 for a call
(:mod:`.dispatch`)."""
