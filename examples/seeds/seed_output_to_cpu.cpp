// seed_output_to_cpu.cpp - seed 004, example 1:
//
//   a_gpu = torch.randn(10, 10).to(device)
//   model = torch.nn.Linear(10, 1).to(device)
//   with torch.no_grad(): output = model(a_gpu)
//   output_cpu = output.to('cpu')
//
// The forward pass runs on cuda:0 and the one copy per step is the output
// coming back to the CPU, which the placement summary shows.

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Graph g("inference");
  auto a = g.input("a", {10, 10}).to(locus::cuda(0));
  locus::nn::Linear model(g, 10, 1,
                          {.name = "model", .device = locus::cuda(0)});
  auto output = model(a);
  auto outputCpu = output.to(locus::cpu());
  g.output("output_cpu", outputCpu);

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  std::vector<float> data = seed::uniform(100, -1.0, 1.0, 41);
  locus::RunStats stats;
  auto out = compiled.run({{"a", seed::f32({10, 10}, data)}}, &stats);
  // The reference: the same weights, read back from the model.
  const locus::HostTensor &w = compiled.state("model.weight");
  const locus::HostTensor &bias = compiled.state("model.bias");
  double worst = 0;
  for (int r = 0; r < 10; ++r) {
    double ref = bias.f32[0];
    for (int k = 0; k < 10; ++k)
      ref += double(data[r * 10 + k]) * double(w.f32[k]);
    worst = std::max(worst, std::fabs(ref - out.at("output_cpu").f32[r]));
  }
  std::printf("output_cpu: [10, 1] on the CPU; %llu copies this step; worst "
              "error against the weights read back %g\n",
              static_cast<unsigned long long>(stats.copies), worst);
  return worst < 1e-5 ? 0 : 1;
}
