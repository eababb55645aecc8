// The same through the installed C++ wrapper (locus/runtime.hpp).
#include <locus/runtime.hpp>

#include <iostream>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_cpp model.locus\n";
    return 2;
  }
  try {
    locus::rt::Model model = locus::rt::Model::load(argv[1]);
    locus::rt::Context context(model);
    for (const auto &input : model.inputs()) {
      std::vector<float> values(input.byteSize / sizeof(float), 0.5f);
      context.setInput(input.name, values.data(), input.byteSize);
    }
    context.run();
    const std::vector<locus::rt::TensorInfo> outputs = model.outputs();
    const locus::rt::TensorInfo &out = outputs.at(0);
    std::vector<float> values(out.byteSize / sizeof(float));
    context.readOutput(out.name, values.data(), out.byteSize);
    std::cout << "consumer (C++): " << out.name << " = " << values.at(0)
              << "\n";
  } catch (const std::exception &e) {
    std::cerr << "consumer_cpp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
