#!/usr/bin/python3
"""Writes the small ONNX models the tool tests read (committed beside this
script; rerun with Debian's python3-onnx to remake them):

  mlp.onnx          x [batch, 4] -> Gemm(fc1) -> Relu -> Gemm(fc2) -> y [batch, 3],
                    opset 14, 'batch' symbolic
  unsupported.onnx  Atanh twice and Acosh once: ops Locus does not import
  mlp_external.onnx the MLP with its weights in mlp_external.data
  blocks.onnx       x [1, 4, 6, 6] -> stem conv, two residual blocks
                    (layer1.0, layer1.1: conv, relu, conv, add, relu), flatten,
                    fc -> y [1, 3], node names scoped as PyTorch's exporter
                    scopes them ("/layer1/layer1.0/conv1/Conv")
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def init(name, shape):
    return numpy_helper.from_array(
        rng.uniform(-1, 1, shape).astype(np.float32), name)


mlp = helper.make_graph(
    [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"],
                      name="fc1", transB=1),
     helper.make_node("Relu", ["h"], ["r"], name="relu"),
     helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"],
                      name="fc2", transB=1)],
    "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    [init("fc1.weight", (8, 4)), init("fc1.bias", (8,)),
     init("fc2.weight", (3, 8)), init("fc2.bias", (3,))])
model = helper.make_model(mlp, opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "mlp.onnx"))

bad = helper.make_graph(
    [helper.make_node("Atanh", ["x"], ["a"], name="atanh_a"),
     helper.make_node("Acosh", ["a"], ["b"], name="acosh"),
     helper.make_node("Atanh", ["b"], ["y"], name="atanh_b")],
    "unsupported",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
model = helper.make_model(bad, opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "unsupported.onnx"))

# The same MLP with its initializers in a file beside the model (ONNX's
# external data), as exporters write models over 2 GB.
model = onnx.load(os.path.join(here, "mlp.onnx"))
onnx.save_model(model, os.path.join(here, "mlp_external.onnx"),
                save_as_external_data=True, all_tensors_to_one_file=True,
                location="mlp_external.data", size_threshold=0)

# Two ResNet-style blocks with PyTorch's node scopes: what the dump groups
# into layers.
nodes, inits = [], []


def conv(scope, src, dst, name):
    inits.extend([init(name + ".weight", (4, 4, 3, 3)),
                  init(name + ".bias", (4,))])
    nodes.append(helper.make_node(
        "Conv", [src, name + ".weight", name + ".bias"], [dst],
        name=scope + "/Conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]))


conv("/conv1", "x", "s", "conv1")
src = "s"
for b in range(2):
    layer = "layer1.%d" % b
    scope = "/layer1/" + layer
    conv(scope + "/conv1", src, layer + "_c1", layer + ".conv1")
    nodes.append(helper.make_node("Relu", [layer + "_c1"], [layer + "_r1"],
                                  name=scope + "/relu/Relu"))
    conv(scope + "/conv2", layer + "_r1", layer + "_c2", layer + ".conv2")
    nodes.append(helper.make_node("Add", [layer + "_c2", src], [layer + "_a"],
                                  name=scope + "/Add"))
    nodes.append(helper.make_node("Relu", [layer + "_a"], [layer + "_out"],
                                  name=scope + "/relu_1/Relu"))
    src = layer + "_out"
nodes.append(helper.make_node("Flatten", [src], ["flat"], name="/Flatten"))
inits.extend([init("fc.weight", (3, 144)), init("fc.bias", (3,))])
nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"],
                              name="/fc/Gemm", transB=1))
blocks = helper.make_graph(
    nodes, "blocks",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
model = helper.make_model(blocks, opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "blocks.onnx"))
