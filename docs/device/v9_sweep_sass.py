"""Issue 27: the SASS of the sweep cells that moved on the H100 (docs/results/lean/h100_v9/compare.md), version 8
against version 9, with docs/device/sass_compare.py. Dev machine, no GPU; needs .device/sweep (sweep.py generate):

    git archive d7b3897 | tar -x -C /tmp/oldkg        # template version 8
    python docs/device/v9_sweep_sass.py /tmp/sass_v8 /tmp/oldkg
    python docs/device/v9_sweep_sass.py /tmp/sass_v9
    python docs/device/sass_compare.py compare /tmp/sass_v8 /tmp/sass_v9
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "docs/device")
import sass_compare as sc

# The cells that moved by more than 1% against stop 23 run 11, each in the dtype it moved in.
cells = {"e04": "float64", "e12": "float64", "e14": "float16", "e16": "float64", "e17": "float64", "e23": "float16",
         "e25": "float64", "e26": "float64", "e29": "float16", "e31": "float64", "e34": "float16"}
ops = {o["name"]: o for o in json.loads(Path(".device/sweep/sweep.json").read_text())["ops"]}
sc.OPS.clear()
for name, dtype in cells.items():
    sc.OPS[name] = ["--inputs", ",".join(ops[name]["inputs"]), "--expr", ops[name]["expr"], "--dtypes", dtype]
out, src = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else None)
sc.dump(out, list(cells), src)
