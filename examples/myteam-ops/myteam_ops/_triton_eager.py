"""The eager fast path every Triton op of this package shares.

A call through torch.ops.myteam.<op> crosses from the dispatcher into Python twice (the
autograd wrapper that register_autograd installs, then the body of the triton_op): on an H100
machine one eager call costs 75 us of host time, against 12 us for Triton's launch alone and 35 us
for a call of the same formula under torch.compile. That is longer than the kernel runs on 2^24
half-precision elements, so a loop of eager calls would leave the GPU idle. Each op's public function
therefore launches its kernel itself (``_<op>_launch`` in ops/<op>.py, the op's own CUDA path) when
the registered op would do exactly that and nothing else: plain CUDA tensors (nn.Parameter included),
no autograd graph to record, and nothing that watches or rewrites op calls. Every other call goes
through the op: torch.compile (it traces the op and Inductor sees the kernel), autograd,
FakeTensorMode and other TorchDispatchModes, TorchFunctionModes (``with torch.device(...)`` is one),
torch.func transforms (vmap, grad), the profiler (so that traces name the op) and tensor subclasses.
torch.ops.myteam.<op> always takes the registered path.
"""

from __future__ import annotations

import torch

try:
    import triton
except ImportError:  # a CPU-only install: every call takes the registered op (its CPU implementation)
    TRITON_AVAILABLE = False
else:
    TRITON_AVAILABLE = True

try:  # the torch internals the check reads; a torch without them always takes the registered op
    _DISPATCH_HOOKS = (
        torch._C._len_torch_dispatch_stack,
        torch._C._is_torch_function_mode_enabled,
        torch._C._functorch.peek_interpreter_stack,
        torch._C._autograd._profiler_enabled,
    )
except AttributeError:
    _DISPATCH_HOOKS = None
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _plain_eager(tensors: tuple[torch.Tensor, ...]) -> bool:
    # Plain CUDA tensors, and nothing that watches or rewrites op calls.
    if torch.compiler.is_compiling() or _DISPATCH_HOOKS is None or not TRITON_AVAILABLE:
        return False
    dispatch_modes, function_modes, functorch_stack, profiling = _DISPATCH_HOOKS
    if dispatch_modes() or function_modes() or functorch_stack() is not None or profiling():
        return False
    return all(type(t) in _PLAIN_TENSORS and t.is_cuda for t in tensors)


def autograd_records(*tensors: torch.Tensor) -> bool:
    """True when autograd is to record a call on ``tensors``: grad mode is on and one of them requires grad."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def eager_launch_ok(*tensors: torch.Tensor) -> bool:
    """True when launching directly is exactly what the registered op would do with ``tensors``."""
    return _plain_eager(tensors) and not autograd_records(*tensors)


def eager_autograd_ok(*tensors: torch.Tensor) -> bool:
    """True when autograd is to record the call and the rest is plain (see eager_launch_ok): an op with a
    generated backward then records its own torch.autograd.Function, whose forward and backward launch the
    kernels the registered op and its backward op launch, with the same checks and the same results. In
    training, each step would otherwise cross from the dispatcher into Python four times (the autograd
    wrapper and the op's body, forward and backward): on an H100 machine 600 us of host time per
    forward+backward of an elementwise op, longer than its kernels run on 2^26 float32 elements."""
    return autograd_records(*tensors) and _plain_eager(tensors)


# The launches' grid and block arithmetic on the host, in plain integers. triton.cdiv and triton.next_power_of_2
# are constexpr functions: called from Python, each unwraps its arguments and imports a module on every call,
# about 1.6 us, and a backward of a Triton rowwise op with weights calls them up to ten times a step.
def cdiv(a, b):
    """ceil(a / b) of two lengths (ints, or torch.compile's symbolic ones: the same expression as triton.cdiv's)."""
    return (a + b - 1) // b


def next_power_of_2(n):
    """The least power of 2 that is at least the length ``n``; a symbolic length (torch.compile's dynamic shapes)
    goes to triton.next_power_of_2."""
    return 1 << (n - 1).bit_length() if isinstance(n, int) and n >= 1 else triton.next_power_of_2(n)
