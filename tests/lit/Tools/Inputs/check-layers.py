"""Checks the layers of a locus-dump JSON of examples/models' ResNet-18
training step: the C++ layers' names reach every op they record, forward
and backward, and an optimizer's update belongs to its parameter's layer.

  check-layers.py dump.json
"""
import collections
import json
import sys

ops = json.load(open(sys.argv[1], encoding="utf-8"))["ops"]
by_layer = collections.defaultdict(collections.Counter)
for op in ops:
    by_layer[op.get("layer", "")][op["label"]] += 1


def expect(cond, what):
    if not cond:
        sys.exit("check-layers: " + what)


# A conv layer: its conv2d, both gradients, the update and the write.
conv = by_layer["layer1.0.conv1"]
for label in ["conv2d", "conv2d_input_grad", "conv2d_weight_grad", "sgd",
              'parameter "layer1.0.conv1.weight"',
              'assign to parameter "layer1.0.conv1.weight"']:
    expect(conv[label] == 1, "layer1.0.conv1 lacks %s: %s" % (label, conv))
# The block's own ops: its relus and the residual add.
block = by_layer["layer1.0"]
expect(block["relu"] == 2 and block["add"] == 1, "layer1.0 has %s" % block)
# A downsample path under its torchvision name.
expect(by_layer["layer2.0.downsample.0"]["conv2d"] == 1, "no downsample conv")
# Everything the model's layers record has a layer; what has none is the
# graph's inputs and outputs, the loss (outside every layer) and copies.
for op in ops:
    if not op.get("layer"):
        expect(op["label"].startswith(("input", "output", "copy")) or
               op["source"].get("line") and "called_from" not in op["source"],
               "op #%d %s has no layer" % (op["id"], op["label"]))
print("layers", len(by_layer), "ops", len(ops))
