// seed_mixed_add.cpp - seed 002, example 3:
//
//   tensor_cpu = torch.randn(3, 4)
//   tensor_device = torch.randn(3, 4).to(device)
//   tensor_cpu + tensor_device    # RuntimeError on a machine with a GPU
//
// Under policy=strict (the default here) Locus reports it at compile time,
// naming the line of the add and the lines where both operands were made;
// under --policy=prefer-gpu it copies the CPU tensor over and adds on the GPU.

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Graph g("mixed_add");
  auto tensorCpu = g.input("tensor_cpu", {3, 4});
  auto tensorDevice = g.input("tensor", {3, 4}).to(locus::cuda(0));
  auto sum = tensorCpu + tensorDevice;
  g.output("sum", sum);

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  std::vector<float> a = seed::uniform(12, -1.0, 1.0, 21),
                     b = seed::uniform(12, -1.0, 1.0, 22);
  auto out = compiled.run(
      {{"tensor_cpu", seed::f32({3, 4}, a)}, {"tensor", seed::f32({3, 4}, b)}});
  double worst = 0;
  for (size_t i = 0; i < 12; ++i)
    worst = std::max(worst, std::fabs(double(out.at("sum").f32[i]) -
                                      (double(a[i]) + double(b[i]))));
  std::printf("sum checked against a + b: worst error %g\n", worst);
  return worst < 1e-6 ? 0 : 1;
}
