//===- TrainEval.cpp - one recording, trained and evaluated
//----------------===//
//
// A training step and its evaluation form, compiled from one recording,
// switched with train() / eval() and kept on one state.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile.h"

#include <algorithm>

using namespace locus;

TrainEvalModel::TrainEvalModel(CompiledModel training, CompiledModel evaluation)
    : trainingModel_(std::move(training)), evalModel_(std::move(evaluation)) {
  const std::vector<std::string> &names = trainingModel_.stateNames();
  for (const std::string &name : evalModel_.stateNames()) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw RunError("TrainEvalModel: the evaluation model's state '" + name +
                     "' is not the training model's: compile both from one "
                     "graph");
    const HostTensor &a = trainingModel_.state(name);
    const HostTensor &b = evalModel_.state(name);
    if (a.shape != b.shape || a.dtype != b.dtype)
      throw RunError("TrainEvalModel: state '" + name +
                     "' differs between the training and the evaluation "
                     "model: compile both from one graph");
  }
}

std::map<std::string, HostTensor>
TrainEvalModel::run(const std::map<std::string, HostTensor> &inputs,
                    RunStats *stats) {
  if (training_) {
    stale_ = true;
    return trainingModel_.run(inputs, stats);
  }
  if (stale_) {
    for (const std::string &name : evalModel_.stateNames())
      evalModel_.setState(name, trainingModel_.state(name));
    stale_ = false;
  }
  return evalModel_.run(inputs, stats);
}

CompiledModel::StateDictKeys
TrainEvalModel::load_state_dict(const std::map<std::string, HostTensor> &dict,
                                bool strict) {
  stale_ = true;
  return trainingModel_.load_state_dict(dict, strict);
}

void TrainEvalModel::setState(const std::string &name,
                              const HostTensor &value) {
  stale_ = true;
  trainingModel_.setState(name, value);
}

TrainEvalModel locus::compileTrainEval(const Graph &graph,
                                       const CompileOptions &options,
                                       Here loc) {
  if (options.eval)
    throw Error(loc.file_name(), loc.line(), loc.column(),
                "compileTrainEval compiles for evaluation itself: leave "
                "CompileOptions::eval unset");
  CompileOptions evaluation = options;
  evaluation.eval = true;
  CompiledModel training = compile(graph, options, loc);
  return TrainEvalModel(std::move(training), compile(graph, evaluation, loc));
}
