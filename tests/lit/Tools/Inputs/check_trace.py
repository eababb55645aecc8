"""Checks a Locus trace (Chrome trace JSON) of `steps` runs:

  check_trace.py trace.json STEPS [--copies] [--load-copies]

Every step has its step event, and the same kernels (at least one), each
inside its step's time, on a named lane, with bytes and a source naming a
locus op at a file:line; with --copies every step copies with bytes > 0;
with --load-copies the load's copies are there too. Prints a summary.
"""
import json
import re
import sys


def fail(why):
    print("check_trace: " + why)
    sys.exit(1)


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    flags = set(sys.argv[3:])
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    timed = [e for e in events if e.get("ph") == "X"]
    step_events = {e["args"]["step"]: e for e in timed if e["cat"] == "step"}
    if sorted(step_events) != list(range(1, steps + 1)):
        fail("step events %s, expected 1..%d" % (sorted(step_events), steps))
    source = re.compile(r"^locus\.\w+ at [^;]+:\d+")
    per_step = {}
    for e in timed:
        if e["tid"] not in lanes:
            fail("event on an unnamed lane: %r" % e)
        if e["dur"] < 0:
            fail("negative duration: %r" % e)
        step = e["args"]["step"]
        if e["cat"] == "kernel":
            a = e["args"]
            if not source.match(a["source"]):
                fail("kernel %s has source %r" % (e["name"], a["source"]))
            # The typed records behind the text: each op counted, with the
            # user's line the text names first.
            ops = a.get("ops") or []
            if not ops or any(o["count"] < 1 or not o["op"].startswith(
                    "locus.") for o in ops):
                fail("kernel %s has ops %r" % (e["name"], ops))
            if not a["source"].startswith(ops[0]["op"] + " at " + ops[0]["at"]):
                fail("kernel %s: source %r and ops %r differ"
                     % (e["name"], a["source"], ops))
            if a["bytes"] <= 0 or not a["device"] or not a["runs_on"]:
                fail("kernel without device or bytes: %r" % e)
        elif e["cat"] == "copy":
            if e["args"]["bytes"] <= 0:
                fail("copy without bytes: %r" % e)
        if step == "load" or e["cat"] == "step":
            continue
        s = step_events[step]
        # Timestamps are in microseconds with three decimals.
        if e["ts"] < s["ts"] - 0.002 or \
                e["ts"] + e["dur"] > s["ts"] + s["dur"] + 0.002:
            fail("%s of step %d outside its step" % (e["name"], step))
        per_step.setdefault(step, []).append((e["cat"], e["name"]))
    first = per_step.get(1, [])
    kernels = [n for c, n in first if c == "kernel"]
    copies = [n for c, n in first if c == "copy"]
    if not kernels:
        fail("no kernel in step 1")
    for step in range(2, steps + 1):
        if sorted(per_step.get(step, [])) != sorted(first):
            fail("step %d differs from step 1" % step)
    if "--copies" in flags and not copies:
        fail("no copies in a step")
    load = [e for e in timed if e["args"]["step"] == "load"]
    if "--load-copies" in flags and not any(e["cat"] == "copy" for e in load):
        fail("no load-time copies")
    print("trace ok: %d steps, %d kernels and %d copies each, %d load events"
          % (steps, len(kernels), len(copies), len(load)))


main()
