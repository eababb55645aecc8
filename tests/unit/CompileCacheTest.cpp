// CompileCacheTest.cpp - the compile cache through locus::compile(): a hit
// gives the same model without compiling, every changed input misses,
// concurrent writers leave one whole entry, a damaged entry is rebuilt, the
// switch and an unsafe folder keep it out, the bound evicts the least
// recently used, and models loaded at once each run their own code.

#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include <sys/stat.h>
#include <utime.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

using namespace locus;
namespace fs = std::filesystem;

namespace {

/// A fresh, empty cache folder for one test.
std::string freshFolder(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("locus-cache-" + name);
  fs::remove_all(dir);
  return dir.string();
}

/// The cache's entry files, and whether any temporary file is left.
std::vector<fs::path> entries(const std::string &dir,
                              bool *temporaries = nullptr) {
  std::vector<fs::path> out;
  if (temporaries)
    *temporaries = false;
  if (!fs::exists(dir))
    return out;
  for (const fs::directory_entry &e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".lcc")
      out.push_back(e.path());
    else if (temporaries &&
             e.path().filename().string().find(".tmp-") != std::string::npos)
      *temporaries = true;
  }
  return out;
}

/// y = act(fc(x)), fc's weights given values, so a run's result is known.
Graph smallGraph(const std::string &act = "relu", int64_t width = 6) {
  Graph g("cached");
  Tensor x = g.input("x", {3, 5});
  nn::Linear fc(g, 5, width, {.name = "fc"});
  Tensor h = fc(x);
  g.output("y", act == "relu" ? relu(h) : tanh(h));
  return g;
}

std::map<std::string, HostTensor> batch() {
  return {{"x", HostTensor::fromF32({3, 5}, randomValues(15, 7))}};
}

CompileOptions cached(const std::string &dir) {
  return {.policy = "cpu", .devices = {"cpu"}, .cacheDir = dir};
}

std::vector<float> outputOf(const CompiledModel &m) {
  return m.run(batch()).at("y").f32;
}

} // namespace

/// The cache as a test expects it whatever the caller's environment: on,
/// with the default bound.
class CompileCache : public ::testing::Test {
protected:
  void SetUp() override {
    for (std::string name : {"LOCUS_CACHE", "LOCUS_CACHE_MAX_BYTES"}) {
      const char *value = std::getenv(name.c_str());
      saved_.emplace_back(name, value ? std::optional<std::string>(value)
                                      : std::nullopt);
      ::unsetenv(name.c_str());
    }
  }
  void TearDown() override {
    for (const auto &[name, value] : saved_)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(CompileCache, AHitGivesTheSameModelWithoutCompiling) {
  std::string dir = freshFolder("hit");
  Graph g = smallGraph();
  std::vector<Diagnostic> cold, warm;
  CompileOptions options{.policy = "prefer-gpu",
                         .devices = {"cpu", "cuda:0"},
                         .deviceMap = "cuda:0=sim",
                         .cacheDir = dir};
  options.diagnostics = [&](const Diagnostic &d) { cold.push_back(d); };
  CompiledModel first = compile(g, options);
  EXPECT_FALSE(first.fromCache());
  ASSERT_EQ(entries(dir).size(), 1u);
  options.diagnostics = [&](const Diagnostic &d) { warm.push_back(d); };
  CompiledModel second = compile(g, options);
  EXPECT_TRUE(second.fromCache());
  // The same results, summary, kernels and warnings (at the same lines).
  second.setState("fc.weight", first.state("fc.weight"));
  second.setState("fc.bias", first.state("fc.bias"));
  EXPECT_EQ(outputOf(first), outputOf(second));
  EXPECT_EQ(first.placementSummary(), second.placementSummary());
  EXPECT_EQ(first.kernelCount(), second.kernelCount());
  EXPECT_EQ(first.estimatedStepNs(), second.estimatedStepNs());
  ASSERT_FALSE(cold.empty());
  ASSERT_EQ(cold.size(), warm.size());
  for (size_t i = 0; i < cold.size(); ++i)
    EXPECT_EQ(cold[i].str(), warm[i].str());
  EXPECT_EQ(entries(dir).size(), 1u);
}

TEST_F(CompileCache, EachChangedInputMisses) {
  std::string dir = freshFolder("miss");
  std::string profile = dir + "-profile.json";
  fs::copy_file(LOCUS_TEST_PROFILE, profile,
                fs::copy_options::overwrite_existing);
  CompileOptions base = cached(dir);
  CompileOptions noFuse = base, policy = base, withProfile = base, tf32 = base;
  noFuse.fuse = false;
  policy.policy = "auto";
  withProfile.profile = profile;
  tf32.policy = "prefer-gpu";
  tf32.devices = {"cpu", "cuda:0"};
  tf32.deviceMap = "cuda:0=sim";
  tf32.allowTf32 = true;
  std::vector<std::pair<Graph, CompileOptions>> variants = {
      {smallGraph(), base},          {smallGraph("tanh"), base},
      {smallGraph("relu", 7), base}, {smallGraph(), noFuse},
      {smallGraph(), policy},        {smallGraph(), withProfile},
      {smallGraph(), tf32}};
  for (size_t i = 0; i < variants.size(); ++i)
    EXPECT_FALSE(compile(variants[i].first, variants[i].second).fromCache())
        << "variant " << i;
  EXPECT_EQ(entries(dir).size(), variants.size());
  // The profile's contents count, not its name.
  std::ofstream(profile, std::ios::app) << "\n";
  EXPECT_FALSE(compile(smallGraph(), withProfile).fromCache());
  for (size_t i = 0; i < variants.size(); ++i)
    EXPECT_TRUE(compile(variants[i].first, variants[i].second).fromCache())
        << "variant " << i;
}

TEST_F(CompileCache, ConcurrentWritersLeaveOneWholeEntry) {
  std::string dir = freshFolder("concurrent");
  // One graph each: compile() of one Graph is not for several threads.
  constexpr size_t kThreads = 4;
  std::vector<Graph> graphs;
  graphs.reserve(kThreads);
  for (size_t i = 0; i < kThreads; ++i)
    graphs.push_back(smallGraph());
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        CompiledModel m = compile(graphs[i], cached(dir));
        m.setState("fc.weight",
                   HostTensor::fromF32({6, 5}, std::vector<float>(30, 0.25f)));
        results[i] = outputOf(m);
      } catch (const std::exception &e) {
        failures[i] = e.what();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(failures[i], "") << "thread " << i;
    EXPECT_EQ(results[i], results[0]) << "thread " << i;
  }
  bool temporaries = true;
  EXPECT_EQ(entries(dir, &temporaries).size(), 1u);
  EXPECT_FALSE(temporaries);
  EXPECT_TRUE(compile(smallGraph(), cached(dir)).fromCache());
}

TEST_F(CompileCache, ADamagedEntryIsRebuilt) {
  std::string dir = freshFolder("damaged");
  Graph g = smallGraph();
  std::vector<float> want = outputOf(compile(g, cached(dir)));
  fs::path entry = entries(dir).at(0);
  auto damage = [&](bool truncate) {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    if (truncate) {
      f.close();
      fs::resize_file(entry, bytes.size() / 2);
      return;
    }
    f.seekp(static_cast<std::streamoff>(bytes.size() / 2));
    f.put(static_cast<char>(bytes[bytes.size() / 2] ^ 0x20));
  };
  for (bool truncate : {false, true}) {
    damage(truncate);
    std::vector<Diagnostic> seen;
    CompileOptions options = cached(dir);
    options.diagnostics = [&](const Diagnostic &d) { seen.push_back(d); };
    CompiledModel rebuilt = compile(g, options);
    EXPECT_FALSE(rebuilt.fromCache());
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_NE(seen[0].message.find("removed the damaged compile cache entry"),
              std::string::npos)
        << seen[0].message;
    EXPECT_EQ(outputOf(rebuilt), want);
    EXPECT_TRUE(compile(g, cached(dir)).fromCache());
    EXPECT_EQ(entries(dir).size(), 1u);
  }
}

TEST_F(CompileCache, TheSwitchesKeepItOut) {
  std::string dir = freshFolder("off");
  Graph g = smallGraph();
  CompileOptions off = cached(dir);
  off.cache = false;
  EXPECT_FALSE(compile(g, off).fromCache());
  EXPECT_FALSE(fs::exists(dir));
  ::setenv("LOCUS_CACHE", "0", 1);
  EXPECT_FALSE(compile(g, cached(dir)).fromCache());
  EXPECT_FALSE(compile(g, cached(dir)).fromCache());
  ::unsetenv("LOCUS_CACHE");
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CompileCache, AFolderOthersMayWriteIsNotUsed) {
  std::string dir = freshFolder("unsafe");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  std::vector<Diagnostic> seen;
  CompileOptions options = cached(dir);
  options.diagnostics = [&](const Diagnostic &d) { seen.push_back(d); };
  Graph g = smallGraph();
  EXPECT_FALSE(compile(g, options).fromCache());
  EXPECT_FALSE(compile(g, options).fromCache());
  EXPECT_TRUE(entries(dir).empty());
  // Said once per process, not at every compile.
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].message.find("others may write"), std::string::npos)
      << seen[0].message;
}

TEST_F(CompileCache, TheBoundEvictsTheLeastRecentlyUsed) {
  std::string dir = freshFolder("bound");
  CompiledModel a = compile(smallGraph("relu", 6), cached(dir));
  fs::path first = entries(dir).at(0);
  // Room for about one and a half entries.
  std::string bound = std::to_string(fs::file_size(first) * 3 / 2);
  struct utimbuf old{1000000000, 1000000000};
  ASSERT_EQ(::utime(first.c_str(), &old), 0);
  ::setenv("LOCUS_CACHE_MAX_BYTES", bound.c_str(), 1);
  CompiledModel b = compile(smallGraph("relu", 8), cached(dir));
  ::unsetenv("LOCUS_CACHE_MAX_BYTES");
  std::vector<fs::path> left = entries(dir);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0], first);
  EXPECT_TRUE(compile(smallGraph("relu", 8), cached(dir)).fromCache());
  EXPECT_FALSE(compile(smallGraph("relu", 6), cached(dir)).fromCache());
}

TEST_F(CompileCache, SaveKeepsItsHostCodeToo) {
  std::string dir = freshFolder("save");
  Graph g = smallGraph();
  std::string one = dir + "-1.locus", two = dir + "-2.locus";
  compile(g, cached(dir)).save(one, "x86-64-v3");
  EXPECT_EQ(entries(dir).size(), 2u); // native, and x86-64-v3
  CompiledModel again = compile(g, cached(dir));
  EXPECT_TRUE(again.fromCache());
  again.save(two, "x86-64-v3");
  EXPECT_EQ(entries(dir).size(), 2u);
  std::ifstream a(one, std::ios::binary), b(two, std::ios::binary);
  std::string bytesA((std::istreambuf_iterator<char>(a)), {}),
      bytesB((std::istreambuf_iterator<char>(b)), {});
  // The same code; the state section holds each model's own weights.
  EXPECT_EQ(bytesA.size(), bytesB.size());
}

// glibc hands an object already loaded under the same path to a later
// dlopen(): two models whose host code came through memfds of one number
// once shared the first one's code.
TEST_F(CompileCache, ModelsLoadedAtOnceRunTheirOwnCode) {
  std::string dir = freshFolder("two");
  std::vector<CompiledModel> models;
  for (const char *act : {"relu", "tanh", "relu"})
    models.push_back(compile(smallGraph(act), cached(dir)));
  HostTensor w = HostTensor::fromF32({6, 5}, randomValues(30, 3));
  for (CompiledModel &m : models)
    m.setState("fc.weight", w);
  std::vector<float> relu = outputOf(models[0]), tanh = outputOf(models[1]);
  EXPECT_TRUE(models[2].fromCache());
  EXPECT_EQ(outputOf(models[2]), relu);
  bool negative = false;
  for (size_t i = 0; i < relu.size(); ++i) {
    EXPECT_GE(relu[i], 0.0f);
    negative |= tanh[i] < 0;
  }
  EXPECT_TRUE(negative) << "the tanh model ran the relu model's code";
}
