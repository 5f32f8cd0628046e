"""The Python face of each op of rmsnorm: ops/<op>.py holds the public function, the reference
implementation the tests compare against, register_fake (torch.compile) and register_autograd.

The package's __init__.py imports every op module after the compiled code is loaded; import the
ops from there (`from rmsnorm import <op>`), and the references from here
(`from rmsnorm.ops.<op> import reference`).
"""
