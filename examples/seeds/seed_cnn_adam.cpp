// seed_cnn_adam.cpp - seed 004, example 3:
//
//   model = SimpleCNN().to(device)   # Conv2d(3, 16, 3, padding=1), ReLU,
//                                    # MaxPool2d(2, 2), flatten, Linear(784,
//                                    10)
//   X = torch.randn(32, 3, 14, 14).to(device); y = torch.randint(0, 10, (32,))
//   criterion = CrossEntropyLoss(); optimizer = Adam(lr=0.001)
//   dataloader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
//   for epoch in range(50): for batch_x, batch_y in dataloader: train step
//
// The whole training step (forward, backward, Adam) runs on cuda:0; the
// weights and Adam's moments live there from load on. The loop runs through
// CompiledModel::runBatches: batch i + 1 is copied into the second of two
// device buffers while step i runs. The loss is printed every 10 epochs.

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Device device = locus::cuda(0);
  locus::Graph g("cnn_train_step");
  auto batchX = g.input("batch_x", {16, 3, 14, 14}, {.device = device});
  auto batchY =
      g.input("batch_y", {16}, {.dtype = locus::DType::i64, .device = device});
  locus::nn::Sequential model{
      locus::nn::Conv2d(g, 3, 16, {3},
                        {.padding = {1, 1}, .name = "conv1", .device = device}),
      locus::nn::ReLU(), locus::nn::MaxPool2d({2}, {2}), locus::nn::Flatten(),
      locus::nn::Linear(g, 16 * 7 * 7, 10, {.name = "fc", .device = device})};
  locus::optim::Adam optimizer(model.parameters(), {.lr = 0.001});
  auto outputs = model(batchX);
  auto loss = locus::nn::CrossEntropyLoss()(outputs, batchY);
  g.output("loss", loss);
  optimizer.step(loss);

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  const size_t samples = 32, batch = 16, epochs = 50;
  std::vector<float> xs = seed::uniform(samples * 3 * 14 * 14, -2.0, 2.0, 3001);
  std::vector<int64_t> ys = seed::labels(samples, 10, 3002);
  const size_t perEpoch = samples / batch;
  std::vector<size_t> order;
  float last = 0;
  compiled.runBatches(
      epochs * perEpoch,
      [&](size_t step) -> std::map<std::string, locus::HostTensor> {
        if (step % perEpoch == 0) // a new epoch: shuffle=True
          order = seed::shuffled(samples, 5000 + step / perEpoch);
        size_t first = (step % perEpoch) * batch;
        return {
            {"batch_x",
             seed::f32({16, 3, 14, 14},
                       seed::rowsOf(xs, order, first, batch, 3 * 14 * 14))},
            {"batch_y", locus::HostTensor::fromI64(
                            {16}, seed::rowsOf(ys, order, first, batch, 1))}};
      },
      [&](size_t step, const std::map<std::string, locus::HostTensor> &out) {
        last = out.at("loss").scalar();
        size_t epoch = step / perEpoch + 1;
        if ((step + 1) % perEpoch == 0 && epoch % 10 == 0)
          std::printf("Epoch [%zu/%zu], Loss: %.4f\n", epoch, epochs, last);
      });
  std::printf("final loss %.9g\n", last);
  return 0;
}
