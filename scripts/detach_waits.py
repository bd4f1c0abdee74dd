#!/usr/bin/env python3
"""Where a bench run waits: samples the kernel stack of the bench process
(/proc/PID/stack, root only) every 50 ms and counts which synchronize_*
call (and its caller) it is blocked in. For docs/attach.md's account of what
dominates attach-uprobe's detach.

    sudo scripts/detach_waits.py [bench arguments...]   (default: attach-uprobe --attach-cnt 50)
"""
import collections
import os
import subprocess
import sys
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:] or ["attach-uprobe", "--attach-cnt", "50"]
proc = subprocess.Popen([os.path.join(root, "bench"), *args], stdout=subprocess.DEVNULL)
counts = collections.Counter()
while proc.poll() is None:
    try:
        with open(f"/proc/{proc.pid}/stack") as f:
            frames = [l.split()[1].split("+")[0] for l in f if l.strip()]
    except OSError:
        break
    key = next(
        (f"{fn} <- {frames[i + 1]}" for i, fn in enumerate(frames)
         if fn.startswith("synchronize_") and i + 1 < len(frames)),
        frames[0] if frames else "on a CPU (no kernel stack)",
    )
    counts[key] += 1
    time.sleep(0.05)
total = sum(counts.values())
print(f"{total} samples of {' '.join(args)}")
for key, n in counts.most_common():
    print(f"{n:5d} {100 * n / total:5.1f} %  {key}")
sys.exit(proc.returncode)
