// seed_dataloader.cpp - seed 001, examples 3 and 4 (the DataLoader loop):
//
//   model = torch.nn.Linear(10, 2).to(device)
//   dataloader = DataLoader(TensorDataset(input_data, target_data),
//   batch_size=10) for inputs, targets in dataloader:
//       output = model(inputs)     # inputs remain on the CPU: forgot
//       .to(device) loss = mse_loss(output, targets)
//
// trained with SGD for 5 epochs. Under policy=strict (the default here) the
// forgotten move is a compile error naming both lines. With
// --policy=prefer-gpu Locus copies each batch over at every step (and says
// so); with --fixed the batches are moved (inputs made on cuda:0), as in
// example 4. Either way the loop runs through CompiledModel::runBatches,
// which fetches and copies batch i + 1 while step i runs.

#include "seed_common.h"

int main(int argc, char **argv) {
  bool fixed = seed::flag(argc, argv, "--fixed");
  locus::InputOptions where;
  if (fixed)
    where.device = locus::cuda(0); // inputs = inputs.to(device)
  locus::Graph g("dataloader_step");
  auto inputs = g.input("inputs", {10, 10}, where);
  auto targets = g.input("targets", {10, 2}, where);
  locus::nn::Linear model(g, 10, 2,
                          {.name = "model", .device = locus::cuda(0)});
  locus::optim::SGD optimizer(model.parameters(), {.lr = 0.01});
  auto output = model(inputs);
  auto loss = locus::nn::MSELoss()(output, targets);
  g.output("loss", loss);
  optimizer.step(loss);

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  // The dataset: 100 samples, 10 batches of 10 in order, 5 epochs.
  std::vector<float> xs = seed::uniform(100 * 10, -2.0, 2.0, 2001),
                     ys = seed::uniform(100 * 2, -2.0, 2.0, 2002);
  std::vector<size_t> order(100);
  std::iota(order.begin(), order.end(), 0);
  const size_t batches = 10, epochs = 5;
  float last = 0;
  locus::RunStats stats;
  compiled.runBatches(
      batches * epochs,
      [&](size_t step) -> std::map<std::string, locus::HostTensor> {
        size_t first = (step % batches) * 10;
        return {{"inputs",
                 seed::f32({10, 10}, seed::rowsOf(xs, order, first, 10, 10))},
                {"targets",
                 seed::f32({10, 2}, seed::rowsOf(ys, order, first, 10, 2))}};
      },
      [&](size_t step, const std::map<std::string, locus::HostTensor> &out) {
        last = out.at("loss").scalar();
        if ((step + 1) % batches == 0)
          std::printf("Epoch %zu, loss: %.4f\n", (step + 1) / batches, last);
      },
      &stats);
  std::printf("last step: %llu kernel launches, %llu copies (%llu bytes)\n",
              static_cast<unsigned long long>(stats.launches),
              static_cast<unsigned long long>(stats.copies),
              static_cast<unsigned long long>(stats.copyBytes));
  std::printf("final loss %.9g\n", last);
  return 0;
}
