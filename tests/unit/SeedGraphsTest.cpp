// SeedGraphsTest.cpp - the forward graphs of the seed programs
// (docs/training.md, "The seed programs"), recorded the way their PyTorch
// originals are written.

#include "locus/locus.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

using namespace locus;

namespace {

/// Op name -> count, read from the printed graph.
std::map<std::string, int> opCounts(const Graph &g) {
  std::map<std::string, int> counts;
  std::istringstream lines(g.str());
  std::regex op(R"(^\s*(?:%\S+ = )?(locus\.\w+))");
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, op) && m[1] != "locus.graph")
      ++counts[m[1]];
  return counts;
}

// Seed 000, example 1: model = torch.nn.Linear(10, 2); MSELoss on 100x10.
TEST(SeedGraphs, LinearMse) {
  Graph g("train_step");
  auto input = g.input("input_data", {100, 10});
  auto target = g.input("target_data", {100, 2});
  nn::Linear model(g, 10, 2);
  nn::MSELoss lossFn;
  auto loss = lossFn(model(input), target);
  g.output("loss", loss);
  EXPECT_EQ(loss.shape(), Shape{});
  EXPECT_EQ(opCounts(g), (std::map<std::string, int>{{"locus.input", 2},
                                                     {"locus.state", 2},
                                                     {"locus.linear", 1},
                                                     {"locus.mse_loss", 1},
                                                     {"locus.output", 1}}));
  ASSERT_EQ(model.parameters().size(), 2u);
  EXPECT_EQ(model.weight().shape(), (Shape{2, 10}));
  EXPECT_EQ(model.bias().shape(), (Shape{2}));
}

// Seed 000, example 2: the model moved to cuda, the data left on the CPU.
// Recording succeeds; placement (strict) is what rejects it.
TEST(SeedGraphs, ModelMovedDataNot) {
  Graph g("train_step");
  auto input = g.input("input_data", {100, 10});
  auto target = g.input("target_data", {100, 2});
  nn::Linear model(g, 10, 2, {.device = cuda(0)});
  auto loss = nn::MSELoss()(model(input), target);
  g.output("loss", loss);
  std::string text = g.str();
  EXPECT_NE(text.find("\"linear0.weight\" parameter : tensor<2x10xf32> init"),
            std::string::npos);
  EXPECT_NE(text.find("on <cuda:0>"), std::string::npos) << text;
  EXPECT_EQ(text.find("locus.input \"input_data\" : tensor<100x10xf32> on"),
            std::string::npos);
}

// Seed 000, example 3 / seed 004: model and data moved with .to(device).
TEST(SeedGraphs, EverythingMoved) {
  Graph g("train_step");
  auto device = Device::parse("cuda");
  auto input = g.input("input_data", {100, 10}).to(device);
  auto target = g.input("target_data", {100, 2}).to(device);
  nn::Linear model(g, 10, 2, {.device = device});
  auto loss = nn::MSELoss()(model(input), target);
  g.output("loss", loss);
  EXPECT_EQ(opCounts(g)["locus.to"], 2);
}

// Seed 004: DataLoader over 100 samples with batch_size 32, Linear(10, 1).
// One step's graph takes one batch.
TEST(SeedGraphs, DataLoaderStep) {
  Graph g("step");
  auto batchX = g.input("batch_x", {32, 10});
  auto batchY = g.input("batch_y", {32, 1});
  nn::Linear model(g, 10, 1);
  auto outputs = model(batchX);
  auto loss = nn::MSELoss()(outputs, batchY);
  g.output("loss", loss);
  EXPECT_EQ(outputs.shape(), (Shape{32, 1}));
  EXPECT_EQ(opCounts(g)["locus.linear"], 1);
}

// Seed 004: SimpleCNN -- Conv2d(3, 16, 3, padding=1), ReLU, MaxPool2d(2, 2),
// x.view(x.size(0), -1), Linear(16*7*7, 10), CrossEntropyLoss on 14x14 images.
TEST(SeedGraphs, SimpleCnn) {
  Graph g("cnn_step");
  auto x = g.input("X", {32, 3, 14, 14});
  auto y = g.input("y", {32}, {.dtype = DType::i64});
  nn::Conv2d conv1(g, 3, 16, {3}, {.padding = {1, 1}});
  nn::ReLU relu;
  nn::MaxPool2d pool({2}, {2});
  nn::Linear fc(g, 16 * 7 * 7, 10);
  auto h = pool(relu(conv1(x)));
  EXPECT_EQ(h.shape(), (Shape{32, 16, 7, 7}));
  h = reshape(h, {h.dim(0), -1});
  EXPECT_EQ(h.shape(), (Shape{32, 784}));
  auto logits = fc(h);
  auto loss = nn::CrossEntropyLoss()(logits, y);
  g.output("loss", loss);
  EXPECT_EQ(logits.shape(), (Shape{32, 10}));
  EXPECT_EQ(opCounts(g), (std::map<std::string, int>{{"locus.input", 2},
                                                     {"locus.state", 4},
                                                     {"locus.conv2d", 1},
                                                     {"locus.relu", 1},
                                                     {"locus.max_pool2d", 1},
                                                     {"locus.reshape", 1},
                                                     {"locus.linear", 1},
                                                     {"locus.cross_entropy", 1},
                                                     {"locus.output", 1}}));
}

// Seed 004's DataLoader halves the CNN batch to 16: a second graph with the
// same layers' shapes records independently.
TEST(SeedGraphs, CnnBatch16) {
  Graph g("cnn16");
  auto x = g.input("x", {16, 3, 14, 14});
  nn::Sequential model{nn::Conv2d(g, 3, 16, {3}, {.padding = {1, 1}}),
                       nn::ReLU(), nn::MaxPool2d({2}), nn::Flatten(),
                       nn::Linear(g, 784, 10)};
  EXPECT_EQ(model(x).shape(), (Shape{16, 10}));
}

} // namespace
