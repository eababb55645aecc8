//===- Onnx.cpp - ONNX models recorded as Locus graphs --------------------===//
//
// The model is parsed with ONNX's protobuf classes and checked with ONNX's
// checker (libonnx-dev), then recorded node by node through the frontend's
// public calls, each under an OriginScope naming the node. Values whose
// data is known while importing (initializers, Constant nodes and what is
// computed from them and from static shapes) are kept on the host as Const
// and folded; they become graph values only where a recorded op needs
// them.
//
// This file: the entry points, loading and checking the model, its inputs,
// outputs and initializers, and the dispatch over nodes through the table
// of handlers; Importer.h lists the files that hold the rest.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <onnx/checker.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

namespace locus::onnx_import {

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

void Importer::load() {
  std::ifstream file(path_, std::ios::binary);
  if (!file)
    fail("cannot open the file: " + std::string(std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(file)), {});
  if (!model_.ParseFromString(bytes))
    fail("not an ONNX model (the protobuf does not parse)");
  try {
    onnx::checker::check_model(path_);
  } catch (const std::exception &e) {
    std::string why = e.what();
    while (!why.empty() && why.back() == '\n')
      why.pop_back();
    fail("ONNX's checker rejects the model: " + why);
  }
  for (const auto &opset : model_.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      opset_ = static_cast<int>(opset.version());
  if (opset_ < kOnnxMinOpset || opset_ > kOnnxMaxOpset)
    fail("the model uses opset " + std::to_string(opset_) +
         " of the default ONNX domain; Locus reads opsets " +
         std::to_string(kOnnxMinOpset) + " to " +
         std::to_string(kOnnxMaxOpset) +
         " (re-export with torch.onnx.export(..., opset_version=17))");
}

void Importer::checkSupported() const {
  const auto &known = handlers();
  std::map<std::string, std::pair<int, std::vector<std::string>>> missing;
  const auto &nodes = model_.graph().node();
  for (int k = 0; k < nodes.size(); ++k) {
    const NodeProto &n = nodes[k];
    bool standard = n.domain().empty() || n.domain() == "ai.onnx";
    std::string type = standard ? n.op_type() : n.domain() + "::" + n.op_type();
    if (standard && known.count(n.op_type()))
      continue;
    auto &entry = missing[type];
    if (++entry.first <= 3)
      entry.second.push_back(n.name().empty() ? "#" + std::to_string(k)
                                              : "'" + n.name() + "'");
  }
  if (missing.empty())
    return;
  std::string message = "the model uses ops Locus does not support:";
  for (const auto &[type, entry] : missing) {
    message += "\n  " + type + " x" + std::to_string(entry.first) + " (";
    for (size_t k = 0; k < entry.second.size(); ++k)
      message += (k ? ", " : "") + entry.second[k];
    message += entry.first > 3 ? ", ...)" : ")";
  }
  message += "\n(docs/onnx.md lists the supported ops)";
  fail(message);
}

void Importer::addInputs(Graph &g) {
  std::set<std::string> initializers;
  for (const TensorProto &t : model_.graph().initializer()) {
    Value v;
    v.constant = tensorConst(t);
    v.initializer = true;
    values_[t.name()] = std::move(v);
    initializers.insert(t.name());
  }
  for (const auto &input : model_.graph().input()) {
    if (initializers.count(input.name()))
      continue; // an initializer listed as an input: its value is known
    const auto &type = input.type();
    if (!type.has_tensor_type())
      fail("input '" + input.name() + "' is not a tensor");
    DType dtype;
    switch (type.tensor_type().elem_type()) {
    case TensorProto::FLOAT:
      dtype = DType::f32;
      break;
    case TensorProto::INT64:
      dtype = DType::i64;
      break;
    case TensorProto::INT32:
      dtype = DType::i32;
      break;
    case TensorProto::BOOL:
      dtype = DType::i1;
      break;
    case TensorProto::FLOAT16:
      dtype = DType::f16;
      break;
    case TensorProto::BFLOAT16:
      dtype = DType::bf16;
      break;
    default:
      fail("input '" + input.name() + "' has ONNX element type " +
           std::to_string(type.tensor_type().elem_type()) +
           "; Locus inputs are float, float16, bfloat16, int64, int32 or "
           "bool");
    }
    Shape shape;
    std::vector<InputDim> dims; // with the dimensions kept dynamic
    std::vector<std::string> symbolic;
    for (const auto &dim : type.tensor_type().shape().dim()) {
      auto kept = dim.has_dim_param()
                      ? options_.dynamicSizes.find(dim.dim_param())
                      : options_.dynamicSizes.end();
      if (dim.has_dim_value()) {
        shape.push_back(dim.dim_value());
        dims.emplace_back(dim.dim_value());
      } else if (kept != options_.dynamicSizes.end()) {
        shape.push_back(kept->second);
        dims.push_back(dyn(kept->first, kept->second));
      } else {
        symbolic.push_back(dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                                               : "?");
        shape.push_back(-1);
        dims.emplace_back(-1);
      }
    }
    if (auto given = options_.shapes.find(input.name());
        given != options_.shapes.end()) {
      if (given->second.size() != shape.size())
        fail("--shape gives input '" + input.name() + "' rank " +
             std::to_string(given->second.size()) + "; the model's is " +
             std::to_string(shape.size()));
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] >= 0 && shape[d] != given->second[d])
          fail("--shape gives input '" + input.name() + "' dimension " +
               std::to_string(d) + " = " + std::to_string(given->second[d]) +
               "; the model fixes it at " + std::to_string(shape[d]));
      shape = given->second;
      dims.assign(shape.begin(), shape.end());
    } else if (!symbolic.empty()) {
      std::string names;
      for (size_t k = 0; k < symbolic.size(); ++k)
        names += (k ? ", " : "") + symbolic[k];
      fail("input '" + input.name() + "' has symbolic dimensions (" + names +
           "): give its shape, e.g. --shape " + input.name() + "=" +
           [&] {
             std::string s;
             for (size_t d = 0; d < shape.size(); ++d)
               s += (d ? "x" : "") + (shape[d] < 0 ? std::string("1")
                                                   : std::to_string(shape[d]));
             return s;
           }() +
           ", or keep a named one dynamic up to a bound, e.g. --dynamic "
           "NAME=64 (CPU only)");
    }
    Value v;
    detail::OriginScope origin(g, path_, "input '" + input.name() + "'");
    v.tensor = g.input(input.name(), dims, {.dtype = dtype});
    values_[input.name()] = std::move(v);
  }
}

//===----------------------------------------------------------------------===//
// The handlers
//===----------------------------------------------------------------------===//

const Importer::Handlers &Importer::handlers() {
  // Each op_type is registered by one family: the order of the calls does
  // not matter.
  static const Handlers table = [] {
    Handlers t;
    addElementwiseHandlers(t);
    addActivations(t);
    addNnHandlers(t);
    addReductionHandlers(t);
    addShapeHandlers(t);
    addConstantHandlers(t);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

void Importer::importNode(Graph &g, const NodeProto &node, size_t index) {
  std::string name =
      node.name().empty() ? "#" + std::to_string(index) : node.name();
  std::string what = "node '" + name + "' (" + node.op_type() + ")";
  detail::OriginScope origin(g, path_, what);
  try {
    handlers().at(node.op_type())(*this, g, node);
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, what + ": " + e.message);
  } catch (const Error &e) {
    throw Error(path_, 0, 0, what + ": " + e.message());
  }
}

Graph Importer::run() {
  try {
    load();
    checkSupported();
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, e.message);
  }
  std::string name =
      options_.graphName.empty() ? model_.graph().name() : options_.graphName;
  Graph g(name.empty() ? "onnx" : name);
  graph_ = &g;
  try {
    addInputs(g);
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, e.message);
  }
  for (const auto &[input, shape] : options_.shapes)
    if (!values_.count(input))
      throw Error(path_, 0, 0,
                  "--shape names '" + input +
                      "', which is not an input of "
                      "the model");
  const auto &nodes = model_.graph().node();
  for (int k = 0; k < nodes.size(); ++k)
    importNode(g, nodes[k], static_cast<size_t>(k));
  for (const auto &output : model_.graph().output()) {
    try {
      auto it = values_.find(output.name());
      if (it == values_.end())
        fail("output '" + output.name() + "' is made by no node");
      Value &v = it->second;
      detail::OriginScope origin(g, path_, "output '" + output.name() + "'");
      if (!v.tensor)
        v.tensor = materialize(output.name(), v, false);
      g.output(output.name(), v.tensor);
    } catch (const ImportError &e) {
      throw Error(path_, 0, 0, e.message);
    }
  }
  return g;
}

} // namespace locus::onnx_import

namespace locus {

Graph importOnnx(const std::string &path, const OnnxImportOptions &options) {
  return onnx_import::Importer(path, options).run();
}

std::vector<std::string> onnxSupportedOps() {
  return onnx_import::Importer::supported();
}

} // namespace locus
