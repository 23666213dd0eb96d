"""The Python safetensors baseline of bench/load.bench.mjs and bench/slice.bench.mjs.

One long-lived process: reads one JSON command a line on stdin, answers one JSON line on
stdout with the in-process wall and CPU time (ms; CPU of all threads) of the work, so interpreter and import start-up are not
counted (TensorFS's figures are in-process too), and the minor page faults it took (first
touches of memory: how much of what it returned was fresh memory rather than memory its
allocator reused). numpy framework: torch is not needed.

Commands:
  {"op": "evict", "files": [...]}                      posix_fadvise(DONTNEED) each file (cold reads)
  {"op": "get_tensor", "file": f, "names": [...]|null}  safe_open + get_tensor of each name (all: null)
  {"op": "load_file", "file": f}                        safetensors.numpy.load_file
  {"op": "get_slice", "file": f, "shards": [[name, axis, start, end], ...]}
                                                        safe_open + get_slice(name)[...] for each
Each result is kept until the next command (as a loader would keep it), then dropped.
"""

import json
import os
import resource
import sys
import time

from safetensors import safe_open
from safetensors.numpy import load_file

kept = None


def evict(files):
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def get_tensor(file, names):
    out = {}
    with safe_open(file, framework="np") as f:
        for name in names if names is not None else f.keys():
            out[name] = f.get_tensor(name)
    return out, sum(a.nbytes for a in out.values())


def get_slice(file, shards):
    out = []
    with safe_open(file, framework="np") as f:
        for name, axis, start, end in shards:
            s = f.get_slice(name)
            if axis is None:
                out.append(s[:])
            elif axis == 0:
                out.append(s[start:end])
            else:
                out.append(s[:, start:end])
    return out, sum(a.nbytes for a in out)


for line in sys.stdin:
    cmd = json.loads(line)
    kept = None
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    c0 = time.process_time()
    nbytes = 0
    if cmd["op"] == "evict":
        evict(cmd["files"])
    elif cmd["op"] == "get_tensor":
        kept, nbytes = get_tensor(cmd["file"], cmd.get("names"))
    elif cmd["op"] == "load_file":
        kept = load_file(cmd["file"])
        nbytes = sum(a.nbytes for a in kept.values())
    elif cmd["op"] == "get_slice":
        kept, nbytes = get_slice(cmd["file"], cmd["shards"])
    else:
        raise SystemExit(f"unknown op {cmd['op']}")
    ms = (time.perf_counter() - t0) * 1000
    cpu = (time.process_time() - c0) * 1000
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    sys.stdout.write(json.dumps({"ms": ms, "cpu": cpu, "bytes": nbytes, "faults": faults}) + "\n")
    sys.stdout.flush()
