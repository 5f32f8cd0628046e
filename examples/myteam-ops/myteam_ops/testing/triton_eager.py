"""Tests of a Triton op's eager fast path (myteam_ops/_triton_eager.py): a plain eager call launches
the kernel without the dispatcher, and every other call goes through the registered op.

A Triton op's tests/test_<op>.py adds them to its kind's suite: ``class TestMyOp(TritonEagerChecks,
RowwiseSuite)``.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .suite import requires_cuda, without_compile_caches

__all__ = ["TritonEagerChecks"]


class _SeenOps(TorchDispatchMode):
    """Records the ops that reach the dispatcher."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


class TritonEagerChecks:
    """Mixed into a kind's suite for a Triton op (which provides ``op``, ``sample_args`` and
    ``assert_matches``)."""

    def _ops_module(self):
        return importlib.import_module(f"{__package__.rpartition('.')[0]}.ops.{self.op.name}")

    def _launch_ok(self, *args):
        return self._ops_module()._eager_launch_ok(*args)

    def test_eager_fast_path_is_for_cuda_tensors_only(self):
        # CPU tensors must reach the registered op (its CPU kernel), never the Triton launch.
        assert not self._launch_ok(*self.sample_args(self.op.dtypes[0], "cpu"))

    @requires_cuda
    def test_eager_fast_path_matches_the_registered_op(self, dtype):
        args = self.sample_args(dtype, "cuda")
        assert self._launch_ok(*args), "a plain eager call should take the fast path"
        assert torch.equal(self.op.call(*args), self.op.overload(*args))

    @requires_cuda
    def test_eager_fast_path_steps_aside_when_the_dispatcher_is_needed(self):
        args = self.sample_args(self.op.dtypes[0], "cuda")
        needs_grad = [args[0].detach().requires_grad_()] + args[1:]
        assert not self._launch_ok(*needs_grad)  # autograd must record the op
        with torch.no_grad():
            assert self._launch_ok(*needs_grad)
        assert self._launch_ok(*[torch.nn.Parameter(t, requires_grad=False) for t in args])
        with torch.device("cuda"):  # a TorchFunctionMode
            assert not self._launch_ok(*args)
        with _SeenOps() as seen:
            out = self.op.call(*args)
        assert self.op.overload in seen.ops, "a TorchDispatchMode must see the op"
        self.assert_matches(out, args)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            self.op.call(*args)
        assert f"myteam::{self.op.name}" in {event.name for event in profile.events()}, "the profiler must see the op"

    @requires_cuda
    def test_eager_training_path_matches_the_registered_op(self, dtype):
        """An eager call that needs gradients records the op's own autograd.Function (when the op has a
        generated backward): the same output and the same gradients, bit for bit, as the registered op and
        its backward op, for every subset of the arguments that require grad."""
        if self.op.backward is None:
            pytest.skip(f"{self.op.name}'s backward is the vjp of its reference: autograd records the registered op")
        args = self.sample_args(dtype, "cuda")
        grad = torch.randn(args[0].shape, dtype=dtype, device="cuda").t().contiguous().t()  # a non-contiguous gradient
        module = self._ops_module()
        (function,) = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, torch.autograd.Function)
                       and v.__module__ == module.__name__]
        assert not module._eager_autograd_ok(*args), "nothing requires grad: the plain fast path serves the call"
        for mask in range(1, 2 ** len(args)):
            leaves = [t.detach().requires_grad_(bool(mask >> j & 1)) for j, t in enumerate(args)]
            assert module._eager_autograd_ok(*leaves)
            out = self.op.call(*leaves)
            assert out.grad_fn._forward_cls is function, f"the training path was not taken: {out.grad_fn}"
            wanted = [t for t in leaves if t.requires_grad]
            got = torch.autograd.grad(out, wanted, grad)
            registered = self.op.overload(*leaves)
            assert registered.grad_fn._forward_cls is not function
            expected = torch.autograd.grad(registered, wanted, grad)
            assert torch.equal(out, registered)
            for g, e in zip(got, expected):
                assert torch.equal(g, e)
        with torch.device("cuda"):  # a TorchFunctionMode: the registered op
            assert not module._eager_autograd_ok(*leaves)

    def _training_op(self):
        """The op that autograd records through the dispatcher where the forward saves per-row values for the
        backward (torch.ops.<ns>.<op>_train: the output and those values), or None."""
        packet = getattr(torch.ops.myteam, f"{self.op.name}_train", None) if self.op.backward is not None else None
        if packet is None:
            pytest.skip(f"{self.op.name} has no training op: its forward saves no per-row values for its backward")
        return packet.default

    def test_training_op_opcheck(self, device):
        # The schema, the fake implementation, the autograd registration (the per-row values have no gradient)
        # and the op under torch.compile's tracing, as test_opcheck checks the op itself.
        train = self._training_op()
        args = [t.requires_grad_() for t in self.make_args((5, 9), self.op.dtypes[0], device, seed=11)]
        torch.library.opcheck(train, args)
        out, stats = train(*args)
        assert torch.equal(out, self.op.overload(*args)), "the training op's output must be the op's"
        opmath = torch.float64 if out.dtype == torch.float64 else torch.float32
        assert stats.shape[0] == 5 and stats.dtype == opmath and not stats.requires_grad

    def test_backward_op_error_wrong_known(self, device):
        self._training_op()
        args, grad = self.backward_args((4, 6), self.op.dtypes[0], device, seed=39)
        _, stats = self._training_op()(*args)
        for known in (stats[:3], stats.double() if stats.dtype == torch.float32 else stats.float()):
            with pytest.raises(RuntimeError, match=re.escape(f"{self.op.name}_backward: _known is ")):
                self.op.backward(grad, *args, [True] * len(args), known)

    @requires_cuda
    def test_training_op_serves_autograd_through_the_dispatcher(self, dtype):
        """Where autograd records a call through the dispatcher (here under a TorchDispatchMode; torch.compile
        too), the public function calls <op>_train, whose backward loads the forward's per-row values: at rows
        longer than the backward holds in registers, the same gradients, bit for bit, as the eager training path
        (the same kernels from the same saved values), within their error bounds of the exact ones."""
        train = self._training_op()
        self._needs_a_wider_reference(dtype)
        module = self._ops_module()
        args, grad = self.backward_args((3, module._MAX_BACKWARD_BLOCK + 3), dtype, "cuda", seed=38)
        leaves = [t.detach().requires_grad_() for t in args]
        with _SeenOps() as seen:
            out = self.op.call(*leaves)
        assert train in seen.ops and self.op.overload not in seen.ops, f"autograd did not record the training op: {seen.ops}"
        got = torch.autograd.grad(out, leaves, grad)
        eager = self.op.call(*leaves)
        assert torch.equal(out, eager)
        for g, e in zip(got, torch.autograd.grad(eager, leaves, grad), strict=True):
            assert torch.equal(g, e)
        self.assert_gradients_match(got, grad, args)

    @requires_cuda
    def test_training_op_under_torch_compile_at_long_rows(self):
        """torch.compile(fullgraph=True) of a forward+backward traces <op>_train (the graph dynamo captures holds
        it) and its backward from the saved values: the gradients within their error bounds at rows longer than
        the backward holds in registers."""
        train = self._training_op()
        dtype = next(d for d in self.op.dtypes if d != torch.float64)
        module = self._ops_module()
        args, grad = self.backward_args((3, module._MAX_BACKWARD_BLOCK + 3), dtype, "cuda", seed=41)
        leaves = [t.detach().requires_grad_() for t in args]
        traced = []

        def record(graph, example_inputs):
            traced.extend(node.target for node in graph.graph.nodes if node.op == "call_function")
            return graph.forward

        torch._dynamo.reset()
        with without_compile_caches():
            torch.compile(self.op.call, fullgraph=True, backend=record)(*leaves)
            assert train in traced, f"torch.compile traced {traced}, not the training op"
            torch._dynamo.reset()
            out = torch.compile(self.op.call, fullgraph=True)(*leaves)
            self.assert_gradients_match(torch.autograd.grad(out, leaves, grad), grad, args)
        torch._dynamo.reset()

    @requires_cuda
    @pytest.mark.parametrize("cols", ["backward", "forward"])
    def test_eager_training_path_at_long_rows_matches_the_exact_gradients(self, dtype, cols):
        """At rows longer than the backward holds in registers, the training path's forward saves its per-row values
        and the backward's long kernel loads them instead of computing them again (where the op saves any): its
        gradients, every argument's, within their error bounds of the exact ones. "backward": rows just past what
        the backward holds in registers, the forward's in registers; "forward": just past what the forward holds,
        saved by the forward's long kernel."""
        module = self._ops_module()
        launch = getattr(module, f"_{self.op.name}_launch", None)
        if self.op.backward is None or launch is None or "save" not in inspect.signature(launch).parameters:
            pytest.skip(f"{self.op.name}'s forward saves no per-row values for its backward")
        self._needs_a_wider_reference(dtype)
        length = (module._MAX_BACKWARD_BLOCK if cols == "backward" else module._MAX_BLOCK) + 3
        args, grad = self.backward_args((3, length), dtype, "cuda", seed=37)
        leaves = [t.detach().requires_grad_() for t in args]
        (function,) = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, torch.autograd.Function)
                       and v.__module__ == module.__name__]
        out = self.op.call(*leaves)
        assert out.grad_fn._forward_cls is function, f"the training path was not taken: {out.grad_fn}"
        self.assert_gradients_match(torch.autograd.grad(out, leaves, grad), grad, args)
