// transformer.cpp - a 2-layer Transformer encoder language model, trained
// as in PyTorch:
//
//   tok = Embedding(50, 32); pos = Embedding(16, 32)
//   layers = 2 x TransformerEncoderLayer(32, 4, dim_feedforward=64,
//            dropout=0.0, activation='gelu', batch_first=True,
//            norm_first=True)
//   norm = LayerNorm(32); head = Linear(32, 50)
//   h = tok(ids) + pos(arange(16)); h = layer(h, src_mask=causal) for each
//   loss = cross_entropy(head(norm(h)).view(-1, 50), targets.view(-1))
//   optimizer = AdamW(lr=3e-3, weight_decay=0.01); 20 steps
//   model.eval(); logits of a test batch
//
// State names are PyTorch's (layers.0.self_attn.in_proj_weight, ...), so
// examples/models/torch_models.py starts PyTorch from the same weights and
// feeds it the same tokens. Prints "step N loss L" per step and
// "eval V V ..." (the logits of the last position of each sequence).
//
//   transformer [--policy=...] [--devices=cpu,cuda:0] [--steps=N]
//               [--summary=1] [--save-graph=FILE]

#include "model_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace locus;
using models::option;
using models::uniform;

namespace {

constexpr int64_t kVocab = 50, kSeq = 16, kModel = 32, kHeads = 4, kFf = 64,
                  kBatch = 4;

/// A sequence of tokens that is easy to learn: each token is the previous
/// one plus a per-sequence stride, modulo the vocabulary.
std::vector<int64_t> tokens(size_t sequences, uint64_t seed) {
  std::vector<float> starts = uniform(2 * sequences, 0.0, kVocab, seed);
  std::vector<int64_t> out;
  for (size_t s = 0; s < sequences; ++s) {
    int64_t first = static_cast<int64_t>(starts[2 * s]) % kVocab;
    int64_t stride = 1 + static_cast<int64_t>(starts[2 * s + 1]) % 3;
    for (int64_t t = 0; t <= kSeq; ++t)
      out.push_back((first + stride * t) % kVocab);
  }
  return out;
}

class TinyLM : public nn::Module {
public:
  explicit TinyLM(Graph &g)
      : tok_(g, kVocab, kModel, {.name = "tok"}),
        pos_(g, kSeq, kModel, {.name = "pos"}),
        norm_(g, {kModel}, {.name = "norm"}),
        head_(g, kModel, kVocab, {.name = "head"}) {
    for (int i = 0; i < 2; ++i)
      layers_.push_back(std::make_unique<nn::TransformerEncoderLayer>(
          g, kModel, kHeads,
          nn::TransformerEncoderLayerOptions{.dimFeedforward = kFf,
                                             .dropout = 0.0,
                                             .activation = "gelu",
                                             .batchFirst = true,
                                             .normFirst = true,
                                             .name = "layers." +
                                                     std::to_string(i)}));
  }

  /// ids [B, T] -> logits [B, T, vocab].
  Tensor forward(const Tensor &ids, Here loc) const override {
    Tensor positions = ids.graph(loc).arange(kSeq, DType::i64, loc);
    Tensor h = add(tok_(ids, loc), pos_(positions, loc), loc);
    for (const auto &layer : layers_)
      h = (*layer)(h, {.isCausal = true}, loc);
    return head_(norm_(h, loc), loc);
  }

  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> all;
    for (const nn::Module *m : modules())
      for (const Tensor &p : m->parameters())
        all.push_back(p);
    return all;
  }

  void train(bool on = true) override {
    Module::train(on);
    for (const auto &layer : layers_)
      layer->train(on);
  }

private:
  std::vector<const nn::Module *> modules() const {
    std::vector<const nn::Module *> all = {&tok_, &pos_};
    for (const auto &layer : layers_)
      all.push_back(layer.get());
    all.push_back(&norm_);
    all.push_back(&head_);
    return all;
  }

  nn::Embedding tok_, pos_;
  std::vector<std::unique_ptr<nn::TransformerEncoderLayer>> layers_;
  nn::LayerNorm norm_;
  nn::Linear head_;
};

/// Inputs (the first kSeq tokens) and targets (the next ones) of a batch.
std::map<std::string, HostTensor> batchOf(uint64_t seed, bool targets) {
  std::vector<int64_t> all = tokens(kBatch, seed);
  std::vector<int64_t> in, next;
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = 0; t < kSeq; ++t) {
      in.push_back(all[b * (kSeq + 1) + t]);
      next.push_back(all[b * (kSeq + 1) + t + 1]);
    }
  std::map<std::string, HostTensor> feeds = {
      {"ids", HostTensor::fromI64({kBatch, kSeq}, in)}};
  if (targets)
    feeds["targets"] = HostTensor::fromI64({kBatch * kSeq}, next);
  return feeds;
}

} // namespace

int main(int argc, char **argv) try {
  const int steps = std::stoi(option(argc, argv, "steps", "20"));
  CompileOptions options = models::compileOptions(argc, argv);

  Graph train("transformer_train_step");
  Tensor ids = train.input("ids", {kBatch, kSeq}, {.dtype = DType::i64});
  Tensor targets =
      train.input("targets", {kBatch * kSeq}, {.dtype = DType::i64});
  TinyLM model(train);
  optim::AdamW adamw(model.parameters(), {.lr = 3e-3, .weightDecay = 0.01});
  Tensor logits = reshape(model(ids), {kBatch * kSeq, kVocab});
  Tensor loss = nn::CrossEntropyLoss()(logits, targets);
  train.output("loss", loss);
  adamw.step(loss);
  if (std::string path = option(argc, argv, "save-graph", ""); !path.empty())
    return models::saveGraph(path, train) ? 0 : 1;
  CompiledModel trainer = compile(train, options);
  models::printSummary(argc, argv, trainer);
  for (int step = 0; step < steps; ++step) {
    auto out = trainer.run(batchOf(7000 + step, true));
    std::printf("step %d loss %.9g\n", step, out.at("loss").scalar());
  }

  Graph infer("transformer_eval");
  Tensor ide = infer.input("ids", {kBatch, kSeq}, {.dtype = DType::i64});
  TinyLM evalModel(infer);
  evalModel.eval();
  infer.output("logits", slice(evalModel(ide), 1, kSeq - 1, kSeq));
  CompiledModel predictor = compile(infer, options);
  // The training graph also holds optimizer moments: load the names both
  // have, and every one the eval graph needs.
  if (!predictor.load_state_dict(trainer.state_dict(), /*strict=*/false)
           .missing.empty()) {
    std::fprintf(stderr, "the eval graph has state the trainer lacks\n");
    return 1;
  }
  auto last = predictor.run(batchOf(9000, false)).at("logits");
  models::printValues("eval", last.f32);
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
