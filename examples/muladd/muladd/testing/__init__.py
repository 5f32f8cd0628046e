"""The test suites muladd's ops share, one per kind, and the error model they check results with.

Each op's tests/test_<op>.py describes the op (an ``OpUnderTest``: its functions, input names, dtypes and
error_bound()) and runs its kind's suite by subclassing it: ``class TestMyOp(ElementwiseSuite)``. Cases
of your own go in that class or beside it. The suites need pytest; the package itself does not.
KERNELGEN_TEST_SEED=N (default 0) draws the suites' arguments from other seeds.
"""
