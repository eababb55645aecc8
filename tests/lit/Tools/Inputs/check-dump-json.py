# Checks locus-dump's JSON against the schema in docs/locus-dump.md and prints
# a digest for FileCheck.
import json
import sys

d = json.load(open(sys.argv[1]))
for key in ["schema", "graph", "policy", "targets", "soft_placement", "ops",
            "summary"]:
    assert key in d, key
s = d["summary"]
for key in ["ops_per_device", "copies_per_step", "copies_at_load",
            "bytes_per_step", "bytes_at_load", "step_ns", "warnings"]:
    assert key in s, key
for i, op in enumerate(d["ops"]):
    assert op["id"] == i
    for key in ["op", "label", "shape", "bytes", "device", "reason", "source",
                "estimate_ns", "operands"]:
        assert key in op, (i, key)
    assert all(o < i for o in op["operands"]), "operands come first"
    assert op["device"] in d["targets"]
print("schema %s, %d ops, %d copies per step, %d bytes per step" % (
    d["schema"], len(d["ops"]), s["copies_per_step"], s["bytes_per_step"]))
for op in d["ops"]:
    if op["op"] == "locus.linear":
        src = op["source"]
        print("op %d %s on %s because %s; reads %s; line %d called from %d" % (
            op["id"], op["op"], op["device"], op["reason"]["kind"],
            op["operands"], src["line"], src["called_from"]["line"]))
