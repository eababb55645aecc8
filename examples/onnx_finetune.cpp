// onnx_finetune.cpp - fine-tunes an imported ONNX model from C++: the
// model's output gets a cross-entropy loss against labels, SGD updates
// every parameter the import made from the model's initializers, and each
// step's loss is printed.
//
//   onnx_finetune model.onnx NAME=DxDx... x.f32 labels.i64 [steps] [lr]
//
// x.f32 holds the input (raw little-endian f32 of the given shape), labels
// one i64 class per row of the model's output. The model's first output is
// the logits. tests/onnx/finetune.py runs it against PyTorch.

#include "locus/Compile.h"
#include "locus/Import/Onnx.h"
#include "locus/locus.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

template <typename T> std::vector<T> readRaw(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<T> values(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.begin() + values.size() * sizeof(T),
            reinterpret_cast<char *>(values.data()));
  return values;
}

} // namespace

int main(int argc, char **argv) try {
  if (argc < 5) {
    std::fprintf(stderr, "usage: onnx_finetune model.onnx NAME=DxDx... "
                         "x.f32 labels.i64 [steps] [lr]\n");
    return 2;
  }
  std::string spec = argv[2], name = spec.substr(0, spec.find('='));
  locus::Shape shape;
  std::stringstream dims(spec.substr(spec.find('=') + 1));
  for (std::string d; std::getline(dims, d, 'x');)
    shape.push_back(std::stoll(d));
  int steps = argc > 5 ? std::stoi(argv[5]) : 5;
  double lr = argc > 6 ? std::stod(argv[6]) : 0.01;

  locus::Graph g = locus::importOnnx(argv[1], {.shapes = {{name, shape}}});
  auto labels = g.input("labels", {shape[0]}, {.dtype = locus::DType::i64});
  auto loss = locus::nn::CrossEntropyLoss()(g.outputValue("output"), labels);
  g.output("loss", loss);
  locus::optim::SGD(g.parameters(), {.lr = lr}).step(loss);
  locus::CompiledModel step = locus::compile(g);

  auto x = locus::HostTensor::fromF32(shape, readRaw<float>(argv[3]));
  auto y = locus::HostTensor::fromI64({shape[0]}, readRaw<int64_t>(argv[4]));
  for (int s = 0; s < steps; ++s)
    std::printf("%.9g\n",
                step.run({{name, x}, {"labels", y}}).at("loss").scalar());
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "onnx_finetune: %s\n", e.what());
  return 1;
}
