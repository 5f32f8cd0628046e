"""The Python face of myteam::muladd_tl on the Triton backend: the kernel and its launcher, the
registration (torch.library.triton_op), the CPU implementation, the reference and the autograd
formula. There is no C++: Triton compiles the kernel on its first call for each dtype (and caches
it on disk), so editing this file and re-running the tests is the whole loop.

Why Triton first: write the op in Triton, measure it against torch.compile and, if the package has
one, a CUDA C++ op of the same formula (benchmarks/bench_muladd_tl.py races them), and move to
CUDA C++ (`kernelgen add ... --backend cuda`) only when the numbers say so.
"""

from __future__ import annotations

import torch
from torch.library import wrap_triton

# The eager fast path, shared by the package's Triton ops (../_triton_eager.py says when and why): the
# public function launches the kernel itself when the registered op would do exactly that and nothing
# else; torch.ops.myteam.muladd_tl always goes through the op.
from .._triton_eager import eager_launch_ok as _eager_launch_ok

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:  # a CPU-only install: the CPU implementation below still works
    triton = None

#: True when the CUDA implementation can run (triton is installed).
TRITON_AVAILABLE: bool = triton is not None

__all__ = ["muladd_tl", "reference", "TRITON_AVAILABLE"]

_OP = "myteam::muladd_tl"
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, )


def muladd_tl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Compute ``a * b + c`` elementwise, in one pass over memory.

    Args:
        a: a tensor of dtype float32, float64, float16, bfloat16.
        b: a tensor of dtype float32, float64, float16, bfloat16.
        c: a tensor of dtype float32, float64, float16, bfloat16.
            All inputs must have the same shape, dtype and device (no broadcasting, no type
            promotion). Any strides are accepted.

    Returns:
        A new contiguous tensor with the shape, dtype and device of the inputs.
        float16 and bfloat16 are computed in float32 and rounded once.

    Differentiable with respect to every input. Raises RuntimeError, naming the argument, on a
    device, shape or dtype mismatch or an unsupported dtype, and TypeError for a non-tensor.
    """
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"muladd_tl: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"muladd_tl: {name} must be a dense tensor, got layout {t.layout}")
    if _eager_launch_ok(a, b, c):
        return _muladd_tl_launch(a, b, c, _muladd_tl_kernel)  # see "the eager fast path" below
    return torch.ops.myteam.muladd_tl.default(a, b, c)


def reference(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The specification of muladd_tl in plain PyTorch.

    The tests compare the kernel against it, the benchmark races against it, the CPU
    implementation and the default backward are derived from it. Keep it in step with the
    expression in _muladd_tl_kernel below.
    """
    return a * b + c


def _check_inputs(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    # The same checks, and the same messages, as the CUDA C++ backend's.
    if a.dtype not in _DTYPES:
        raise RuntimeError(f"muladd_tl: a has dtype {a.dtype}, but muladd_tl supports float32, float64, float16, bfloat16")
    if b.device != a.device:
        raise RuntimeError(f"muladd_tl: b is on {b.device} but a is on {a.device}; all inputs must be on the same device")
    if b.dtype != a.dtype:
        raise RuntimeError(f"muladd_tl: b has dtype {b.dtype} but a has dtype {a.dtype}; all inputs must have the same dtype")
    if b.shape != a.shape:
        raise RuntimeError(f"muladd_tl: b has shape {list(b.shape)} but a has shape {list(a.shape)}; all inputs must have the same shape (no broadcasting)")
    if c.device != a.device:
        raise RuntimeError(f"muladd_tl: c is on {c.device} but a is on {a.device}; all inputs must be on the same device")
    if c.dtype != a.dtype:
        raise RuntimeError(f"muladd_tl: c has dtype {c.dtype} but a has dtype {a.dtype}; all inputs must have the same dtype")
    if c.shape != a.shape:
        raise RuntimeError(f"muladd_tl: c has shape {list(c.shape)} but a has shape {list(a.shape)}; all inputs must have the same shape (no broadcasting)")


# ---- the kernel ---------------------------------------------------------------------------------
# Each program handles BLOCK consecutive elements of the flattened, contiguous inputs. Offsets are
# int64: program_id * BLOCK in int32 would overflow past 2**31 elements. The mask covers the ragged
# tail. Loads are widened to the op-math dtype ACC (float32 for float16/bfloat16/float32, float64
# for float64), the expression runs there, and the result is rounded once when stored.
if TRITON_AVAILABLE:

    @triton.jit
    def _muladd_tl_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        a = tl.load(a_ptr + offsets, mask=mask).to(ACC)
        b = tl.load(b_ptr + offsets, mask=mask).to(ACC)
        c = tl.load(c_ptr + offsets, mask=mask).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        result = a * b + c
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


# Block sizes, fixed rather than autotuned: 16 elements per thread at 4 warps for 1- and 2-byte
# types, 8 for 4-byte and 4 for 8-byte types (64, 32 or 32 bytes of each input in flight per
# thread). triton.autotune would re-tune for every new size, stall the first call, and cannot run
# inside CUDA graph capture. On an H100 these sizes run at the speed of torch.compile's own kernels.
_BLOCK = {1: 2048, 2: 2048, 4: 1024, 8: 512}
_NUM_WARPS = 4


# ---- registration -------------------------------------------------------------------------------
# triton_op (not custom_op) makes the op's body visible to torch.compile: Inductor traces into it and
# sees the Triton kernel (launched through wrap_triton) instead of an opaque call. It also uses the
# body, run on fake tensors, as the op's fake implementation, so no register_fake is needed.
@torch.library.triton_op(_OP, mutates_args=())
def _muladd_tl_impl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    if a.device.type != "cuda":
        # Tracing on CPU (opcheck, torch.compile) runs this body too: stay off the GPU path.
        return _muladd_tl_cpu(a, b, c)
    if not TRITON_AVAILABLE:
        raise RuntimeError("muladd_tl: the CUDA implementation needs triton (pip install triton)")
    return _muladd_tl_launch(a, b, c, wrap_triton(_muladd_tl_kernel))


def _muladd_tl_launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, kernel) -> torch.Tensor:
    """The CUDA implementation: the checks, then one launch of ``kernel``, which is the @triton.jit
    function itself on the eager fast path and wrap_triton of it inside the registered op (where
    torch.compile must see the launch)."""
    _check_inputs(a, b, c)
    # Row-major data for flat offsets; the *_contig locals keep any copies alive during the launch.
    a_contig = a.contiguous()
    b_contig = b.contiguous()
    c_contig = c.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = out.numel()
    if n == 0:
        return out
    block = _BLOCK[out.element_size()]
    acc = tl.float64 if out.dtype == torch.float64 else tl.float32
    grid = (triton.cdiv(n, block),)
    # The inputs' GPU must be current: Triton launches on the current device, on its current stream
    # (the caller's stream, so CUDA graphs and side streams work). Switching only when needed saves
    # host time, which is what bounds a launch of a few microseconds of work.
    if a.device.index == torch.cuda.current_device():
        kernel[grid](a_contig, b_contig, c_contig, out, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    else:
        with torch.cuda.device(a.device):
            kernel[grid](a_contig, b_contig, c_contig, out, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    return out


# The CPU implementation: the reference, in op-math precision, rounded once.
@torch.library.register_kernel(_OP, "cpu")
def _muladd_tl_cpu(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    _check_inputs(a, b, c)
    dtype = a.dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    return reference(a.contiguous().to(opmath), b.contiguous().to(opmath), c.contiguous().to(opmath)).to(dtype).contiguous()


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad_out: torch.Tensor):
    # ---- AUTOGRAD STUB ------------------------------------------------------------------------
    # The default backward is the vector-Jacobian product of reference(), computed by
    # torch.func.vjp in op-math precision (float32 for float16/bfloat16 inputs). It is correct for
    # any expression kernelgen accepts, and gradcheck in the tests proves it, but it runs several
    # PyTorch kernels. When the backward matters for speed, write a second Triton kernel for it.
    # ------------------------------------------------------------------------------------------
    saved = ctx.saved_tensors
    dtype = saved[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def in_opmath(*xs: torch.Tensor) -> torch.Tensor:
        return reference(*(x.to(opmath) for x in xs))

    _, vjp = torch.func.vjp(in_opmath, *saved)
    return vjp(grad_out.to(opmath))


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)

