// Records y = relu(x W^T + b) with the installed compiler, runs it, checks
// it against the same computation done here in double, and saves it:
//   record out.locus
#include <locus/Compile.h>
#include <locus/locus.h>

#include <cmath>
#include <cstdio>
#include <iostream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: record out.locus\n";
    return 2;
  }
  try {
    locus::Graph g("mlp");
    g.manual_seed(7);
    auto x = g.input("x", {2, 4});
    locus::nn::Linear fc(g, 4, 3, {.name = "fc"});
    g.output("y", locus::relu(fc(x)));
    locus::CompiledModel model =
        locus::compile(g, {.policy = "cpu", .devices = {"cpu"}});

    std::vector<float> xs = {0.5f,   -1.0f, 2.0f, 0.25f,
                             -0.75f, 1.5f,  0.1f, -2.0f};
    auto out = model.run({{"x", locus::HostTensor::fromF32({2, 4}, xs)}});
    const locus::HostTensor &w = model.state("fc.weight");
    const locus::HostTensor &b = model.state("fc.bias");
    const std::vector<float> &y = out.at("y").f32;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        double ref = b.f32[j];
        for (int k = 0; k < 4; ++k)
          ref += double(xs[i * 4 + k]) * w.f32[j * 4 + k];
        ref = std::max(ref, 0.0);
        if (std::fabs(ref - y[i * 3 + j]) > 1e-5) {
          std::cerr << "y[" << i << "," << j << "] = " << y[i * 3 + j]
                    << ", expected " << ref << "\n";
          return 1;
        }
      }
    model.save(argv[1], "x86-64");
    std::printf("record: %zu kernels, y checked, saved %s\n",
                model.kernelCount(), argv[1]);
  } catch (const locus::Error &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const locus::RunError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
