"""apron's C++ library (bindings; use the `apron` package)"""

from collections.abc import Mapping, Sequence
from typing import Annotated

import numpy
from numpy.typing import NDArray


has_cuda: bool

def available_backends() -> list[str]:
    """backends usable in this build and on this machine"""

def cuda_devices() -> list[str]:
    """one line per visible CUDA device"""

def cuda_status() -> str:
    """'not built', 'built, no device (...)' or 'built, N device(s)'"""

def parse_memory_size(arg: str, /) -> int:
    """bytes from '4G', '512M', '75%' (of physical memory) or a plain number"""

def data_pointer(arg: object, /) -> int: ...

def operations() -> list:
    """
    the op registry: one dict per operation (name, category, summary, details, params, examples)
    """

class Pipeline:
    def __init__(self, arg: Sequence[tuple[str, Mapping[str, Annotated[NDArray[numpy.float64], dict(order='C', device='cpu', writable=False)]]]], /) -> None: ...

    def specs(self) -> list[str]: ...

    def run(self, arg0: int, arg1: bool, arg2: int, arg3: int, arg4: int, arg5: int, arg6: int, arg7: int, arg8: bool, arg9: int, arg10: int, arg11: str, arg12: str, arg13: int, arg14: int, arg15: int, arg16: int, /) -> None: ...

    def time_run(self, arg0: int, arg1: bool, arg2: int, arg3: int, arg4: int, arg5: int, arg6: int, arg7: int, arg8: int, arg9: str, arg10: int, arg11: int, arg12: int, arg13: int, /) -> float: ...

    def output_shape(self, arg0: int, arg1: int, arg2: int, arg3: int, arg4: int, /) -> tuple[int, int, int, int]: ...

    def describe(self, arg0: int, arg1: int, arg2: int, arg3: int, arg4: int, arg5: str, arg6: str, arg7: bool, /) -> str: ...

    def memory_needed(self, arg0: int, arg1: int, arg2: int, arg3: int, arg4: int, arg5: str, /) -> int: ...

def batch(arg0: Pipeline, arg1: Sequence[str], arg2: str, arg3: str, arg4: str, arg5: str, arg6: int, arg7: str, arg8: str, arg9: int, arg10: int, arg11: int, arg12: bool, arg13: bool, arg14: bool, arg15: bool, /) -> dict: ...
