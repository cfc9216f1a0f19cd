"""One rule for every options class (written in nvmathx/_core/options.py): a frozen dataclass,
validated in __post_init__ on every path (constructor, dict, dataclasses.replace)."""

import dataclasses

import pytest

from nvmathx import ExecutionCPU, ExecutionCUDA, OptionsError
from nvmathx._core.options import check_or_create_options
from nvmathx.distributed._reshape import ReshapeOptions
from nvmathx.distributed.fft import FFTOptions as DistributedFFTOptions
from nvmathx.distributed.linalg import MatmulOptions as DistributedMatmulOptions
from nvmathx.fft import FFTOptions
from nvmathx.linalg import MatmulOptions, MatmulPlanPreferences

# (class, a field, a value it refuses)
CASES = [
    (MatmulOptions, "blocking", False),
    (MatmulPlanPreferences, "limit", 0),
    (FFTOptions, "inplace", "yes"),
    (ExecutionCUDA, "device_id", -1),
    (ExecutionCPU, "num_threads", 0),
    (DistributedFFTOptions, "blocking", False),
    (DistributedMatmulOptions, "algorithm", "fastest"),
    (ReshapeOptions, "blocking", False),
]


@pytest.mark.parametrize("cls, field, bad", CASES, ids=lambda v: getattr(v, "__qualname__", None))
def test_frozen_and_validated_on_every_path(cls, field, bad):
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    options = cls()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, bad)
    with pytest.raises(OptionsError, match=field):
        cls(**{field: bad})
    with pytest.raises(OptionsError, match=field):
        dataclasses.replace(options, **{field: bad})
    with pytest.raises(OptionsError, match=field):
        check_or_create_options(cls, {field: bad}, "options")
    assert check_or_create_options(cls, None, "options") == options
