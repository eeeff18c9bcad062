#!/usr/bin/python3
"""mpps.py PART: the Mpps of dataplane-bench --json --only PART's line for
that part (cached: pipeline, overlay: overlay_nat, floor: floor), read
from stdin; exits non-zero when that line is not there."""
import json, sys
want = {"cached": "pipeline", "overlay": "overlay_nat", "floor": "floor"}[sys.argv[1]]
for line in sys.stdin:
    if line.startswith("{"):
        d = json.loads(line)
        if d["bench"] == want:
            print(d["mpps"]); sys.exit(0)
sys.exit(f"mpps.py: no '{want}' line in dataplane-bench's output")
