// dp_train.cpp - one rank of a data-parallel training job, checked against
// one process that trains the same model on the whole batch.
//
//   mpirun -np N dp_train --model=mlp|cnn [--optimizer=sgd|adam]
//       [--devices=cpu|gpu]
//       [--steps=K] [--batch=B] [--save=F] [--resume=F] [--die-at=K]
//
// Every rank trains the model compiled with CompileOptions::dataParallel on
// its shard of each global batch (B samples per rank, the global batch is
// N * B), after joining the job. Every rank also trains a reference: the
// same model compiled without data parallelism, at batch N * B, on the
// whole global batch, from the same initial state. After K steps each
// rank's parameters must match the reference's (DDP's contract: the same
// weights as one process with N times the batch). --save writes rank 0's
// state at the end; --resume loads it on rank 0 alone before the join
// (which copies it to every rank) and into the reference. --die-at kills
// rank 1 at that step: the job must end with an error, not hang.
#include "locus/Compile.h"
#include "locus/locus.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using namespace locus;

namespace {

struct Args {
  std::string model = "mlp", optimizer = "sgd", save, resume;
  /// "cpu", or "gpu": placed with prefer-gpu on cpu and cuda:0 (the sim
  /// device where there is no GPU), so the buckets are on cuda:0.
  std::string devices = "cpu";
  int steps = 5, batch = 4, dieAt = -1;
};

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      return s.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char *v = value("--model="))
      a.model = v;
    else if (const char *v = value("--devices="))
      a.devices = v;
    else if (const char *v = value("--optimizer="))
      a.optimizer = v;
    else if (const char *v = value("--steps="))
      a.steps = std::atoi(v);
    else if (const char *v = value("--batch="))
      a.batch = std::atoi(v);
    else if (const char *v = value("--save="))
      a.save = v;
    else if (const char *v = value("--resume="))
      a.resume = v;
    else if (const char *v = value("--die-at="))
      a.dieAt = std::atoi(v);
    else {
      std::fprintf(stderr, "dp_train: unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return a;
}

constexpr int64_t kFeatures = 12, kClasses = 5, kImage = 6;

/// The model at `batch`, trained by its optimizer on a cross-entropy loss.
/// Named layers: the two recordings have the same state names.
Graph record(const Args &a, int64_t batch) {
  Graph g("dp");
  Tensor logits;
  std::vector<Tensor> params;
  Tensor labels = g.input("labels", {batch}, {.dtype = DType::i64});
  if (a.model == "cnn") {
    Tensor x = g.input("x", {batch, 1, kImage, kImage});
    nn::Conv2d conv(g, 1, 4, {3}, {.padding = {1, 1}, .name = "conv"});
    nn::Linear fc(g, 4 * kImage * kImage, kClasses, {.name = "fc"});
    logits = fc(flatten(relu(conv(x))));
    for (const nn::Module *m : {static_cast<const nn::Module *>(&conv),
                                static_cast<const nn::Module *>(&fc)})
      for (const Tensor &p : m->parameters())
        params.push_back(p);
  } else {
    Tensor x = g.input("x", {batch, kFeatures});
    nn::Linear fc1(g, kFeatures, 16, {.name = "fc1"});
    nn::Linear fc2(g, 16, kClasses, {.name = "fc2"});
    logits = fc2(relu(fc1(x)));
    for (const Tensor &p : fc1.parameters())
      params.push_back(p);
    for (const Tensor &p : fc2.parameters())
      params.push_back(p);
  }
  Tensor loss = cross_entropy(logits, labels);
  g.output("loss", loss);
  if (a.optimizer == "adam") {
    optim::Adam opt(params, {.lr = 0.01});
    opt.step(loss);
  } else {
    optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9});
    opt.step(loss);
  }
  return g;
}

/// Sample i of the dataset (the same on every rank).
void sample(const Args &a, int64_t i, float *x, int64_t &label) {
  int64_t n = a.model == "cnn" ? kImage * kImage : kFeatures;
  for (int64_t k = 0; k < n; ++k)
    x[k] = static_cast<float>(std::sin(0.37 * (i * n + k) + 0.1 * i));
  label = (i * 7 + 3) % kClasses;
}

/// Samples [first, first + count) as the model's inputs.
std::map<std::string, HostTensor> batchOf(const Args &a, int64_t first,
                                          int64_t count) {
  int64_t n = a.model == "cnn" ? kImage * kImage : kFeatures;
  std::vector<float> x(static_cast<size_t>(count * n));
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    sample(a, first + i, x.data() + i * n, labels[static_cast<size_t>(i)]);
  Shape shape = a.model == "cnn" ? Shape{count, 1, kImage, kImage}
                                 : Shape{count, kFeatures};
  return {{"x", HostTensor::fromF32(shape, std::move(x))},
          {"labels", HostTensor::fromI64({count}, std::move(labels))}};
}

} // namespace

int main(int argc, char **argv) {
  Args a = parse(argc, argv);
  try {
    Communicator comm = Communicator::fromEnvironment();
    int rank = comm.rank(), world = comm.size();
    CompileOptions options;
    options.devices = {"cpu"};
    if (a.devices == "gpu") {
      options.devices = {"cpu", "cuda:0"};
      options.policy = "prefer-gpu";
    }
    options.dataParallel = true;
    options.bucketBytes = 1024; // several buckets even for these models
    CompiledModel dp = compile(record(a, a.batch), options);
    if (a.devices == "gpu" &&
        dp.placementSummary().find("bucket 0 on cuda:0") == std::string::npos) {
      std::fprintf(stderr, "dp_train: the buckets are not on cuda:0:\n%s",
                   dp.placementSummary().c_str());
      return 1;
    }
    if (!a.resume.empty() && rank == 0)
      dp.loadState(a.resume);
    dp.joinDataParallel(comm);
    CompileOptions whole;
    whole.devices = {"cpu"};
    CompiledModel ref = compile(record(a, int64_t{a.batch} * world), whole);
    // The reference starts where rank 0 starts: its checkpoint, or the
    // initial state the join copied to every rank.
    if (!a.resume.empty())
      ref.loadState(a.resume);
    else
      ref.load_state_dict(dp.state_dict());

    for (int step = 0; step < a.steps; ++step) {
      if (step == a.dieAt && rank == 1)
        std::raise(SIGKILL);
      int64_t global = int64_t{step} * a.batch * world;
      dp.run(batchOf(a, global + int64_t{rank} * a.batch, a.batch));
      ref.run(batchOf(a, global, int64_t{a.batch} * world));
    }
    double worst = 0;
    std::string where;
    for (const auto &[name, want] : ref.state_dict()) {
      const HostTensor &got = dp.state(name);
      for (size_t i = 0; i < want.f32.size(); ++i) {
        double d = std::fabs(got.f32[i] - want.f32[i]) /
                   (1e-3 + std::fabs(want.f32[i]));
        if (d > worst) {
          worst = d;
          where = name + "[" + std::to_string(i) + "]";
        }
      }
    }
    std::printf("rank %d of %d (%s): %s %s, %d steps, worst relative "
                "difference from one process at batch %d: %.3g (%s)\n",
                rank, world, comm.backend().c_str(), a.model.c_str(),
                a.optimizer.c_str(), a.steps, a.batch * world, worst,
                where.c_str());
    if (!a.save.empty() && rank == 0)
      dp.saveState(a.save);
    if (worst > 1e-4) {
      std::fprintf(stderr, "rank %d: the weights differ from one process's\n",
                   rank);
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dp_train: %s\n", e.what());
    return 1;
  }
}
