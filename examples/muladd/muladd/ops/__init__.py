"""The Python face of each op of muladd: ops/<op>.py holds the public function, the reference
implementation the tests compare against, register_fake (torch.compile) and register_autograd.

The package's __init__.py imports every op module after the compiled code is loaded; import the
ops from there (`from muladd import <op>`), and the references from here
(`from muladd.ops.<op> import reference`).
"""
