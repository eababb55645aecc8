// run_artifact.cpp - runs the artifact save_seed wrote, with the runtime
// alone (no LLVM, MLIR or Boost in this binary):
//
//   run_artifact [seed.locus] [--device-map cuda:0=sim]
//
// Feeds x = U[-1, 1) from seed 1 and y from seed 2 (the runtime's seeded
// generator, as save_seed does) and prints the report and the loss.

#include "locus/runtime.hpp"

#include <cstdio>
#include <iostream>

int main(int argc, char **argv) {
  std::string path = "seed.locus", deviceMap;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device-map" && i + 1 < argc)
      deviceMap = argv[++i];
    else
      path = arg;
  }
  try {
    locus::rt::Model model = locus::rt::Model::load(path, deviceMap);
    std::cout << model.report();
    for (const auto &info : model.inputs())
      std::cout << "input " << info.name << " on " << info.device << "\n";
    for (const auto &info : model.states())
      std::cout << "state " << info.name << " on " << info.device << "\n";
    std::vector<float> xs(1000), ys(200);
    locus::rt::check(locus_init_fill(LOCUS_INIT_UNIFORM, -1.0, 1.0, 1,
                                     xs.size(), xs.data()));
    locus::rt::check(locus_init_fill(LOCUS_INIT_UNIFORM, -1.0, 1.0, 2,
                                     ys.size(), ys.data()));
    locus::rt::Context context(model);
    context.setInput("x", xs);
    context.setInput("y", ys);
    context.run();
    locus_run_stats_t stats = context.stats();
    std::printf("step: %llu launches (%llu on sim), %llu copies (%llu B)\n",
                static_cast<unsigned long long>(stats.launches),
                static_cast<unsigned long long>(stats.sim_launches),
                static_cast<unsigned long long>(stats.copies),
                static_cast<unsigned long long>(stats.copy_bytes));
    std::printf("loss: %.6f\n", context.output<float>("loss").at(0));
  } catch (const locus::rt::Error &e) {
    std::cerr << "run_artifact: " << locus_status_code_name(e.code()) << ": "
              << e.what() << "\n";
    return 1;
  }
  return 0;
}
