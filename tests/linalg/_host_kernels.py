"""The kernels of nvmathx.linalg._kernels run on the host (see tests.helpers.host_kernels): the
fake device's pointers are host addresses."""

from helpers.host_kernels import HostKernels
from nvmathx.linalg._kernels import KERNEL_NAMES, KERNEL_SOURCE

__all__ = ["host_launch"]

host_launch = HostKernels(KERNEL_SOURCE, KERNEL_NAMES, "linalg").launch
