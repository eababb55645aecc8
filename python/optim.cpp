// optim.cpp - locus.optim: the optimizers (with torch.optim's parameter
// groups), the learning rate of a compiled model, and
// locus.optim.lr_scheduler.

#include "locus/Compile/LrScheduler.h"
#include "locus/Frontend/Amp.h"

#include "common.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace locus;
using namespace locus::python;
namespace sched = locus::optim::lr_scheduler;

namespace {

/// A torch.optim `params` argument: tensors, or dicts of parameter groups
/// ({"params": [...], "lr": ...}).
struct PyGroups {
  std::vector<std::vector<Tensor>> params;
  std::vector<py::dict> settings; // each group's keys beside "params"
  bool grouped = false;
};

PyGroups readGroups(const py::iterable &params,
                    const std::set<std::string> &keys) {
  PyGroups groups;
  py::list items(params);
  if (items.empty())
    throw py::value_error("an optimizer needs parameters");
  groups.grouped = py::isinstance<py::dict>(items[0]);
  if (!groups.grouped) {
    groups.params.push_back(items.cast<std::vector<Tensor>>());
    return groups;
  }
  for (const py::handle &item : items) {
    if (!py::isinstance<py::dict>(item))
      throw py::type_error("parameter groups are all dicts, or the "
                           "parameters are all tensors");
    auto group = py::reinterpret_borrow<py::dict>(item);
    if (!group.contains("params"))
      throw py::value_error("a parameter group needs 'params'");
    py::dict settings;
    for (auto [key, value] : group) {
      auto name = key.cast<std::string>();
      if (name == "params")
        continue;
      if (!keys.count(name))
        throw py::value_error("parameter group option '" + name +
                              "' is not one of this optimizer's");
      settings[key] = value;
    }
    py::object p = group["params"];
    groups.params.push_back(py::isinstance<Tensor>(p)
                                ? std::vector<Tensor>{p.cast<Tensor>()}
                                : p.cast<std::vector<Tensor>>());
    groups.settings.push_back(settings);
  }
  return groups;
}

/// The graph the parameters are recorded in.
Graph graphOfGroups(const PyGroups &groups) {
  for (const std::vector<Tensor> &group : groups.params)
    if (!group.empty())
      return graphOf(group.front());
  throw py::value_error("an optimizer needs parameters");
}

template <typename T>
void readSetting(const py::dict &settings, const char *key, T &value) {
  if (settings.contains(key))
    value = settings[key].cast<T>();
}

void readBetas(const py::dict &settings, double &beta1, double &beta2) {
  if (!settings.contains("betas"))
    return;
  auto betas = settings["betas"].cast<std::vector<double>>();
  if (betas.size() != 2)
    throw py::value_error("betas holds two numbers");
  beta1 = betas[0];
  beta2 = betas[1];
}

optim::SGDOptions sgdOptions(const py::dict &s, optim::SGDOptions o) {
  readSetting(s, "lr", o.lr);
  readSetting(s, "momentum", o.momentum);
  readSetting(s, "weight_decay", o.weightDecay);
  readSetting(s, "nesterov", o.nesterov);
  return o;
}

template <typename Options> Options adamOptions(const py::dict &s, Options o) {
  readSetting(s, "lr", o.lr);
  readBetas(s, o.beta1, o.beta2);
  readSetting(s, "eps", o.eps);
  readSetting(s, "weight_decay", o.weightDecay);
  return o;
}

/// An optimizer of `groups`, recorded at the caller's line: one made from
/// the tensors, or from parameter groups whose settings `read` applies over
/// the defaults.
template <typename Opt, typename Options, typename Read>
Opt *makeOptimizer(const PyGroups &groups, const Options &defaults, Read read) {
  Graph g = graphOfGroups(groups);
  return recorded(g, [&] {
    if (!groups.grouped)
      return new Opt(groups.params.front(), defaults, Here::current());
    std::vector<optim::ParamGroup<Options>> list;
    list.reserve(groups.params.size());
    for (size_t i = 0; i < groups.params.size(); ++i)
      list.push_back({groups.params[i], read(groups.settings[i], defaults)});
    return new Opt(list, defaults, Here::current());
  });
}

const std::set<std::string> kSgdKeys{"lr", "momentum", "weight_decay",
                                     "nesterov"};
const std::set<std::string> kAdamKeys{"lr", "betas", "eps", "weight_decay"};

/// torch.optim.Adam's and AdamW's constructor (their default weight decays
/// differ).
template <typename Opt, typename Options>
void defAdamInit(py::class_<Opt, optim::Optimizer> &cls, double weightDecay) {
  cls.def(
      py::init([](const py::iterable &params, double lr,
                  std::pair<double, double> betas, double eps, double decay) {
        return makeOptimizer<Opt>(
            readGroups(params, kAdamKeys),
            Options{lr, betas.first, betas.second, eps, decay},
            adamOptions<Options>);
      }),
      py::arg("params"), py::arg("lr") = 1e-3,
      py::arg("betas") = std::pair<double, double>{0.9, 0.999},
      py::arg("eps") = 1e-8, py::arg("weight_decay") = weightDecay);
}

void bindOptimizers(py::module_ &optim) {
  py::class_<optim::Optimizer>(optim, "Optimizer")
      .def(
          "step",
          [](optim::Optimizer &o, const Tensor &loss) {
            recorded(graphOf(loss), [&] { o.step(loss, Here::current()); });
          },
          py::arg("loss"),
          "Records the backward pass of `loss` and one update of every "
          "parameter: each run of the compiled graph is a training step.")
      .def(
          "step",
          [](optim::Optimizer &o, const std::vector<Tensor> &grads) {
            if (grads.empty())
              throw py::value_error("step() takes one gradient per "
                                    "parameter, got an empty list");
            recorded(graphOf(grads[0]),
                     [&] { o.step(grads, Here::current()); });
          },
          py::arg("grads"),
          "Records one update of every parameter from these gradients "
          "(locus.grad's, perhaps clipped), one per parameter.")
      .def_property_readonly("group_count", &optim::Optimizer::groupCount)
      .def(
          "lr_state_name",
          [](const optim::Optimizer &o, size_t group) {
            return atCaller([&] { return o.lrStateName(group); });
          },
          py::arg("group") = 0,
          "The name of the group's learning-rate state in compiled models.")
      .def(
          "initial_lr",
          [](const optim::Optimizer &o, size_t group) {
            return atCaller([&] { return o.initialLr(group); });
          },
          py::arg("group") = 0);
  py::class_<optim::SGD, optim::Optimizer>(optim, "SGD")
      .def(py::init([](const py::iterable &params, double lr, double momentum,
                       double weightDecay, bool nesterov) {
             return makeOptimizer<optim::SGD>(
                 readGroups(params, kSgdKeys),
                 optim::SGDOptions{lr, momentum, weightDecay, nesterov},
                 sgdOptions);
           }),
           py::arg("params"), py::arg("lr") = 0.01, py::arg("momentum") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::Adam, optim::Optimizer> adam(optim, "Adam");
  defAdamInit<optim::Adam, optim::AdamOptions>(adam, 0.0);
  py::class_<optim::AdamW, optim::Optimizer> adamW(optim, "AdamW");
  defAdamInit<optim::AdamW, optim::AdamWOptions>(adamW, 1e-2);
  optim.def(
      "get_lr",
      [](const CompiledModel &model, const optim::Optimizer &o, size_t group) {
        return atCaller([&] { return optim::getLr(model, o, group); });
      },
      py::arg("model"), py::arg("optimizer"), py::arg("group") = 0,
      "The group's learning rate in the compiled model now.");
  optim.def(
      "set_lr",
      [](CompiledModel &model, const optim::Optimizer &o, double lr,
         size_t group) {
        atCaller([&] { optim::setLr(model, o, lr, group); });
      },
      py::arg("model"), py::arg("optimizer"), py::arg("lr"),
      py::arg("group") = 0,
      "Sets the group's learning rate for the model's later runs, as "
      "optimizer.param_groups[group]['lr'] = lr does in PyTorch; no "
      "recompile.");
}

/// A scheduler made at the caller's line.
template <typename S, typename... Args>
std::shared_ptr<S> makeScheduler(Args &&...args) {
  return atCaller([&] {
    return std::make_shared<S>(std::forward<Args>(args)..., Here::current());
  });
}

/// Each scheduler keeps its optimizer (argument 2) and model (3) alive.
#define LOCUS_KEEP py::keep_alive<1, 2>(), py::keep_alive<1, 3>()

void bindSchedulers(py::module_ &optim) {
  py::module_ m = optim.def_submodule(
      "lr_scheduler", "torch.optim.lr_scheduler over a compiled model's "
                      "learning rates: each takes the optimizer and the "
                      "compiled model, and step() writes the next rates");
  py::class_<sched::LRScheduler, std::shared_ptr<sched::LRScheduler>>(
      m, "LRScheduler")
      .def(
          "step", [](sched::LRScheduler &s) { atCaller([&] { s.step(); }); },
          "Moves to the next epoch and writes its rates into the model.")
      .def(
          "resume_at",
          [](sched::LRScheduler &s, int64_t epoch) {
            atCaller([&] { s.resumeAt(epoch); });
          },
          py::arg("epoch"),
          "Writes that epoch's rates and goes on from there (after a "
          "checkpoint is loaded).")
      .def("get_last_lr", &sched::LRScheduler::getLastLr)
      .def_property_readonly("last_epoch", &sched::LRScheduler::lastEpoch)
      .def_property_readonly("base_lrs", &sched::LRScheduler::baseLrs);
  using Opt = const optim::Optimizer &;
  using Model = CompiledModel &;
  py::class_<sched::StepLR, sched::LRScheduler, std::shared_ptr<sched::StepLR>>(
      m, "StepLR")
      .def(py::init([](Opt o, Model model, int64_t stepSize, double gamma) {
             return makeScheduler<sched::StepLR>(o, model, stepSize, gamma);
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("step_size"),
           py::arg("gamma") = 0.1, LOCUS_KEEP);
  py::class_<sched::MultiStepLR, sched::LRScheduler,
             std::shared_ptr<sched::MultiStepLR>>(m, "MultiStepLR")
      .def(py::init([](Opt o, Model model, std::vector<int64_t> milestones,
                       double gamma) {
             return makeScheduler<sched::MultiStepLR>(
                 o, model, std::move(milestones), gamma);
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("milestones"),
           py::arg("gamma") = 0.1, LOCUS_KEEP);
  py::class_<sched::ExponentialLR, sched::LRScheduler,
             std::shared_ptr<sched::ExponentialLR>>(m, "ExponentialLR")
      .def(py::init([](Opt o, Model model, double gamma) {
             return makeScheduler<sched::ExponentialLR>(o, model, gamma);
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("gamma"),
           LOCUS_KEEP);
  py::class_<sched::CosineAnnealingLR, sched::LRScheduler,
             std::shared_ptr<sched::CosineAnnealingLR>>(m, "CosineAnnealingLR")
      .def(py::init([](Opt o, Model model, int64_t tMax, double etaMin) {
             return makeScheduler<sched::CosineAnnealingLR>(o, model, tMax,
                                                            etaMin);
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("T_max"),
           py::arg("eta_min") = 0.0, LOCUS_KEEP);
  py::class_<sched::LinearLR, sched::LRScheduler,
             std::shared_ptr<sched::LinearLR>>(m, "LinearLR")
      .def(py::init([](Opt o, Model model, double start, double end,
                       int64_t total) {
             return makeScheduler<sched::LinearLR>(o, model, start, end, total);
           }),
           py::arg("optimizer"), py::arg("model"),
           py::arg("start_factor") = 1.0 / 3, py::arg("end_factor") = 1.0,
           py::arg("total_iters") = 5, LOCUS_KEEP);
  py::class_<sched::LambdaLR, sched::LRScheduler,
             std::shared_ptr<sched::LambdaLR>>(m, "LambdaLR")
      .def(py::init([](Opt o, Model model, const py::object &lambdas) {
             using Lambda = sched::LambdaLR::Lambda;
             if (py::isinstance<py::list>(lambdas) ||
                 py::isinstance<py::tuple>(lambdas))
               return std::static_pointer_cast<sched::LambdaLR>(
                   makeScheduler<sched::LambdaLR>(
                       o, model, lambdas.cast<std::vector<Lambda>>()));
             return makeScheduler<sched::LambdaLR>(o, model,
                                                   lambdas.cast<Lambda>());
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("lr_lambda"),
           LOCUS_KEEP);
  py::class_<sched::OneCycleLR, sched::LRScheduler,
             std::shared_ptr<sched::OneCycleLR>>(m, "OneCycleLR")
      .def(py::init([](Opt o, Model model, const py::object &maxLr,
                       std::optional<int64_t> totalSteps,
                       std::optional<int64_t> epochs,
                       std::optional<int64_t> stepsPerEpoch, double pctStart,
                       std::string anneal, bool cycleMomentum, double divFactor,
                       double finalDivFactor, bool threePhase) {
             sched::OneCycleOptions opts;
             opts.maxLr = py::isinstance<py::float_>(maxLr) ||
                                  py::isinstance<py::int_>(maxLr)
                              ? std::vector<double>{maxLr.cast<double>()}
                              : maxLr.cast<std::vector<double>>();
             opts.totalSteps = totalSteps.value_or(0);
             opts.epochs = epochs.value_or(0);
             opts.stepsPerEpoch = stepsPerEpoch.value_or(0);
             opts.pctStart = pctStart;
             opts.annealStrategy = std::move(anneal);
             opts.cycleMomentum = cycleMomentum;
             opts.divFactor = divFactor;
             opts.finalDivFactor = finalDivFactor;
             opts.threePhase = threePhase;
             return makeScheduler<sched::OneCycleLR>(o, model, opts);
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("max_lr"),
           py::arg("total_steps") = py::none(), py::arg("epochs") = py::none(),
           py::arg("steps_per_epoch") = py::none(), py::arg("pct_start") = 0.3,
           py::arg("anneal_strategy") = "cos", py::arg("cycle_momentum") = true,
           py::arg("div_factor") = 25.0, py::arg("final_div_factor") = 1e4,
           py::arg("three_phase") = false, LOCUS_KEEP);
  py::class_<sched::SequentialLR, sched::LRScheduler,
             std::shared_ptr<sched::SequentialLR>>(m, "SequentialLR")
      .def(py::init([](Opt o, Model model,
                       std::vector<std::shared_ptr<sched::LRScheduler>> list,
                       std::vector<int64_t> milestones) {
             return makeScheduler<sched::SequentialLR>(
                 o, model, std::move(list), std::move(milestones));
           }),
           py::arg("optimizer"), py::arg("model"), py::arg("schedulers"),
           py::arg("milestones"), LOCUS_KEEP);
  py::module_::import("sys").attr("modules")["locus.optim.lr_scheduler"] = m;
}

#undef LOCUS_KEEP

/// The tensors of a Python list of gradients, none missing.
std::vector<Tensor> tensorsOf(const py::list &grads, const char *what) {
  if (grads.empty())
    throw py::value_error(std::string(what) +
                          " takes the gradients, got an empty list");
  return grads.cast<std::vector<Tensor>>();
}

/// locus.amp.GradScaler: torch.cuda.amp.GradScaler's calls, recorded into
/// the training step.
void bindAmp(py::module_ &m) {
  py::module_ amp = m.def_submodule("amp", "dynamic loss scaling");
  py::class_<amp::GradScaler>(amp, "GradScaler")
      .def(py::init([](double initScale, double growthFactor,
                       double backoffFactor, int64_t growthInterval,
                       bool enabled) {
             return atCaller([&] {
               return amp::GradScaler({initScale, growthFactor, backoffFactor,
                                       growthInterval, enabled});
             });
           }),
           py::arg("init_scale") = 65536.0, py::arg("growth_factor") = 2.0,
           py::arg("backoff_factor") = 0.5, py::arg("growth_interval") = 2000,
           py::arg("enabled") = true)
      .def(
          "scale",
          [](amp::GradScaler &s, const Tensor &loss) {
            return recorded(graphOf(loss),
                            [&] { return s.scale(loss, Here::current()); });
          },
          py::arg("loss"), "loss * scale: differentiate this one.")
      .def(
          "unscale_",
          [](amp::GradScaler &s, const py::list &grads) {
            std::vector<Tensor> g = tensorsOf(grads, "unscale_()");
            recorded(graphOf(g[0]), [&] { s.unscale_(g, Here::current()); });
            for (size_t i = 0; i < g.size(); ++i)
              grads[i] = py::cast(g[i]);
          },
          py::arg("grads"),
          "Divides the gradients in the list by the scale, in place (before "
          "clipping them).")
      .def(
          "step",
          [](amp::GradScaler &s, optim::Optimizer &opt, const py::list &grads) {
            std::vector<Tensor> g = tensorsOf(grads, "step()");
            recorded(graphOf(g[0]), [&] { s.step(opt, g, Here::current()); });
          },
          py::arg("optimizer"), py::arg("grads"),
          "optimizer.step(grads), unscaled first unless unscale_() was "
          "called, and writing no state when a gradient held an inf or NaN.")
      .def(
          "update",
          [](amp::GradScaler &s) {
            if (!s.scaleState())
              return atCaller([&] { s.update(Here::current()); });
            recorded(graphOf(*s.scaleState()),
                     [&] { s.update(Here::current()); });
          },
          "Records the scale's update: halved after an inf or NaN, doubled "
          "after growth_interval steps without one.")
      .def(
          "found_inf",
          [](const amp::GradScaler &s) {
            if (!s.scaleState())
              return atCaller([&] { return s.foundInf(Here::current()); });
            return recorded(graphOf(*s.scaleState()),
                            [&] { return s.foundInf(Here::current()); });
          },
          "A scalar: 1 when the step's gradients held an inf or NaN.")
      .def_property_readonly_static(
          "scale_state_name",
          [](const py::object &) { return amp::GradScaler::scaleStateName(); })
      .def_property_readonly_static(
          "growth_tracker_state_name", [](const py::object &) {
            return amp::GradScaler::growthTrackerStateName();
          });
  py::module_::import("sys").attr("modules")["locus.amp"] = amp;
}

} // namespace

void python::bindOptim(py::module_ &m) {
  py::module_ optim = m.def_submodule("optim", "optimizers");
  bindOptimizers(optim);
  bindSchedulers(optim);
  py::module_::import("sys").attr("modules")["locus.optim"] = optim;
  bindAmp(m);
}
