#!/usr/bin/python3
"""Writes the small ONNX models the tool tests read (committed beside this
script; rerun with Debian's python3-onnx to remake them):

  mlp.onnx          x [batch, 4] -> Gemm(fc1) -> Relu -> Gemm(fc2) -> y [batch, 3],
                    opset 14, 'batch' symbolic
  unsupported.onnx  Sign twice and Floor once: ops Locus does not import
  mlp_external.onnx the MLP with its weights in mlp_external.data
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
    [helper.make_node("Sign", ["x"], ["a"], name="sign_a"),
     helper.make_node("Floor", ["a"], ["b"], name="floor"),
     helper.make_node("Sign", ["b"], ["y"], name="sign_b")],
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
