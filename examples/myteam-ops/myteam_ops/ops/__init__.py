"""The Python face of each op of myteam_ops: ops/<op>.py holds the public function, the reference
implementation the tests compare against, register_fake (torch.compile) and register_autograd.

The package's __init__.py imports every op module after the compiled code is loaded; import the
ops from there (`from myteam_ops import <op>`), and the references from here
(`from myteam_ops.ops.<op> import reference`).
"""
