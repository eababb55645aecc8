// onnx_backend_check.cpp - one case of ONNX's backend test data (a folder
// with model.onnx and test_data_set_*/input_*.pb, output_*.pb, as Debian's
// libonnx-testdata ships them) through importOnnx, compile and run,
// compared with the expected outputs at the backend tests' tolerances
// (rtol 1e-3, atol 1e-7).
//
//   onnx_backend_check <case dir> [--sim]
//
// Exit status: 0 passed, 1 a wrong result, 3 an op_type Locus does not
// support, 4 the import or compile refused the model with an error (an
// attribute or dtype not supported), 5 an input or output dtype the test
// harness cannot feed. --sim compiles for cpu + cuda:0 under prefer-gpu,
// which runs cuda:0 on the sim device in-process. Where the import needs
// a value the test data feeds at run time (Resize's scales, Reshape's
// shape: constants in models exporters write) and every data set holds the
// same one, inputs 1.. become initializers, and the case says so.

#include "locus/Compile.h"
#include "locus/Import/Onnx.h"
#include "locus/half.hpp"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

bool readProto(const fs::path &path, google::protobuf::Message &message) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  return in.good() || in.eof() ? message.ParseFromString(bytes) : false;
}

template <typename T> T rawAt(const std::string &raw, size_t k) {
  T v;
  std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
  return v;
}

/// A TensorProto as a HostTensor; false for a dtype Locus has no input of.
bool toHost(const onnx::TensorProto &t, locus::HostTensor &out) {
  locus::Shape shape(t.dims().begin(), t.dims().end());
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  const std::string &raw = t.raw_data();
  bool useRaw = t.has_raw_data();
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: {
    std::vector<float> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = useRaw ? rawAt<float>(raw, k) : t.float_data(int(k));
    out = locus::HostTensor::fromF32(shape, v);
    return true;
  }
  case onnx::TensorProto::INT64: {
    std::vector<int64_t> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = useRaw ? rawAt<int64_t>(raw, k) : t.int64_data(int(k));
    out = locus::HostTensor::fromI64(shape, v);
    return true;
  }
  case onnx::TensorProto::INT32: {
    std::vector<int32_t> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = useRaw ? rawAt<int32_t>(raw, k) : t.int32_data(int(k));
    out = locus::HostTensor::fromI32(shape, v);
    return true;
  }
  case onnx::TensorProto::BOOL: {
    std::vector<int64_t> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = useRaw ? rawAt<uint8_t>(raw, k) : t.int32_data(int(k));
    out = locus::HostTensor::fromBool(shape, v);
    return true;
  }
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    bool brain = t.data_type() == onnx::TensorProto::BFLOAT16;
    std::vector<float> v(n);
    for (size_t k = 0; k < n; ++k) {
      auto bits = useRaw ? rawAt<uint16_t>(raw, k)
                         : static_cast<uint16_t>(t.int32_data(int(k)));
      v[k] = brain ? locus::half::fromBf16Bits(bits)
                   : locus::half::fromF16Bits(bits);
    }
    out = locus::HostTensor::fromF32(
        shape, v, brain ? locus::DType::bf16 : locus::DType::f16);
    return true;
  }
  default:
    return false;
  }
}

/// Whether input file `name` holds the same bytes in every data set.
bool sameInEverySet(const fs::path &dir, const std::string &name) {
  std::string first;
  for (int s = 0;; ++s) {
    fs::path file =
        dir / ("test_data_set_" + std::to_string(s)) / (name + ".pb");
    if (!fs::exists(file))
      return s > 0;
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    if (s == 0)
      first = bytes;
    else if (bytes != first)
      return false;
  }
}

/// The model with inputs 1.. (fed at run time by the test data, but
/// constants in exported models: Resize's scales, Reshape's shape) made
/// initializers of their values, when the data holds one value for each.
/// Written beside nothing the case owns: a file in the temporary folder.
/// Empty when they differ between data sets.
std::string foldInputs(const fs::path &dir, onnx::ModelProto model,
                       std::vector<std::string> &inputs) {
  for (size_t k = 1; k < inputs.size(); ++k) {
    std::string file = "input_" + std::to_string(k);
    onnx::TensorProto t;
    if (!sameInEverySet(dir, file) ||
        !readProto(dir / "test_data_set_0" / (file + ".pb"), t))
      return "";
    t.set_name(inputs[k]);
    *model.mutable_graph()->add_initializer() = t;
  }
  inputs.resize(1);
  fs::path path = fs::temp_directory_path() /
                  ("locus-backend-" + std::to_string(::getpid()) + ".onnx");
  std::ofstream out(path, std::ios::binary);
  if (!model.SerializeToOstream(&out))
    return "";
  return path.string();
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: onnx_backend_check <case dir> [--sim]\n";
    return 2;
  }
  fs::path dir = argv[1];
  bool sim = argc > 2 && std::string(argv[2]) == "--sim";
  onnx::ModelProto model;
  if (!readProto(dir / "model.onnx", model)) {
    std::cerr << "cannot read " << (dir / "model.onnx") << "\n";
    return 2;
  }
  std::set<std::string> initializers;
  for (const auto &t : model.graph().initializer())
    initializers.insert(t.name());
  std::vector<std::string> inputs, outputs;
  for (const auto &i : model.graph().input())
    if (!initializers.count(i.name()))
      inputs.push_back(i.name());
  for (const auto &o : model.graph().output())
    outputs.push_back(o.name());

  std::optional<locus::CompiledModel> compiled;
  locus::CompileOptions options;
  if (sim) {
    options.policy = "prefer-gpu";
    options.devices = {"cpu", "cuda:0"}; // cuda:0 runs on sim in-process
  }
  try {
    compiled = locus::compile(locus::importOnnx((dir / "model.onnx").string()),
                              options);
  } catch (const locus::Error &e) {
    std::string what = e.what();
    std::string folded;
    if (what.find("must be known while importing") != std::string::npos)
      folded = foldInputs(dir, model, inputs);
    if (folded.empty()) {
      std::cout << what << "\n";
      return what.find("ops Locus does not support") != std::string::npos ? 3
                                                                          : 4;
    }
    try {
      compiled = locus::compile(locus::importOnnx(folded), options);
      fs::remove(folded);
      std::cout << "folded inputs 1.. into initializers\n";
    } catch (const locus::Error &again) {
      fs::remove(folded);
      std::cout << again.what() << "\n";
      return 4;
    }
  }

  int sets = 0;
  double worst = 0;
  for (int s = 0;; ++s) {
    fs::path set = dir / ("test_data_set_" + std::to_string(s));
    if (!fs::exists(set))
      break;
    ++sets;
    std::map<std::string, locus::HostTensor> feed;
    for (size_t k = 0; k < inputs.size(); ++k) {
      onnx::TensorProto t;
      if (!readProto(set / ("input_" + std::to_string(k) + ".pb"), t))
        return 2;
      if (!toHost(t, feed[inputs[k]])) {
        std::cout << "input " << inputs[k] << " has ONNX data type "
                  << t.data_type() << "\n";
        return 5;
      }
    }
    std::map<std::string, locus::HostTensor> got;
    try {
      got = compiled->run(feed);
    } catch (const std::exception &e) {
      std::cout << "run failed: " << e.what() << "\n";
      return 4;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      onnx::TensorProto t;
      locus::HostTensor want;
      if (!readProto(set / ("output_" + std::to_string(k) + ".pb"), t))
        return 2;
      if (!toHost(t, want)) {
        std::cout << "output " << outputs[k] << " has ONNX data type "
                  << t.data_type() << "\n";
        return 5;
      }
      const locus::HostTensor &have = got.at(outputs[k]);
      if (have.shape != want.shape) {
        std::cout << "output " << outputs[k] << ": shape differs\n";
        return 1;
      }
      bool isFloat = want.isFloat();
      // 16-bit outputs: a few units in their last place (f16 2^-10, bf16
      // 2^-7 relative), as Locus and numpy may round intermediate values
      // in different places.
      double relative = want.dtype == locus::DType::f16    ? 4e-3
                        : want.dtype == locus::DType::bf16 ? 3e-2
                                                           : 1e-3;
      size_t n = static_cast<size_t>(want.numel());
      for (size_t e = 0; e < n; ++e) {
        double w = isFloat ? want.f32[e] : double(want.i64[e]);
        double h = have.isFloat() ? have.f32[e] : double(have.i64[e]);
        if (std::isnan(w) && std::isnan(h))
          continue;
        double error = std::fabs(h - w);
        double allowed =
            isFloat ? (relative > 1e-3 ? 1e-4 : 1e-7) + relative * std::fabs(w)
                    : 0.0;
        if (!(error <= allowed)) {
          std::cout << "output " << outputs[k] << "[" << e << "] is " << h
                    << ", expected " << w << "\n";
          return 1;
        }
        worst = std::max(worst, error);
      }
    }
  }
  std::cout << "passed " << sets << " data sets, worst error " << worst << "\n";
  return 0;
}
