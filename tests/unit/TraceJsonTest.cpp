// TraceJsonTest.cpp - the runtime's JSON strings and trace events: any
// bytes (a hostile artifact's kernel source included) become valid JSON,
// valid UTF-8 passes through, and a trace holds each event with its step.

#include "json.h"
#include "trace.h"

#include <gtest/gtest.h>

#include <string>

using namespace locus::rt;

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonQuoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonQuoted(std::string("x\ny\t\0z", 6)),
            "\"x\\u000ay\\u0009\\u0000z\"");
  EXPECT_EQ(jsonQuoted("\x7f"), "\"\\u007f\"");
}

TEST(Json, KeepsValidUtf8AndReplacesEveryInvalidByte) {
  EXPECT_EQ(jsonQuoted("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  const std::string bad = "\xEF\xBF\xBD";
  EXPECT_EQ(jsonQuoted("\xFF"), "\"" + bad + "\"");
  EXPECT_EQ(jsonQuoted("a\xE2\x82"), "\"a" + bad + bad + "\""); // truncated
  EXPECT_EQ(jsonQuoted("\xC0\xAF"), "\"" + bad + bad + "\"");   // overlong
  EXPECT_EQ(jsonQuoted("\xED\xA0\x80"),
            "\"" + bad + bad + bad + "\""); // a surrogate
  EXPECT_EQ(jsonQuoted("\xF4\x90\x80\x80"),
            "\"" + bad + bad + bad + bad + "\""); // beyond U+10FFFF
}

TEST(Trace, HoldsEachEventWithItsStepAndAHostileSourceStaysJson) {
  Plan plan;
  plan.devices.push_back({LOCUS_DEVICE_CPU, 0, "cpu"});
  plan.devices.push_back({LOCUS_DEVICE_CUDA, 0, "cuda:0"});
  plan.kernels.push_back({"__locus_kernel_k0_add", 1});
  std::vector<Device *> deviceOf; // unplaced: lanes say "?"
  std::vector<std::string> sources = {"locus.add at \"evil\n.py:3\xFF"};
  Trace trace;
  trace.start("unused.json");
  ASSERT_TRUE(trace.on());
  auto t = Trace::Clock::now();
  trace.copy(0, 1, 64, 0, Trace::kLoad, t);
  trace.kernel(0, 128, 1, 1, t);
  trace.copy(1, 0, 32, 1, 1, t);
  trace.step(1, 1, t);
  trace.kernel(7, 1, 1, 1, t); // not a kernel of the plan: left out
  std::string json = trace.json({plan, deviceOf, sources});
  EXPECT_NE(json.find(R"("name":"k0_add","cat":"kernel")"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("source":"locus.add at \"evil\u000a.py:3)"
                      "\xEF\xBF\xBD\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("args":{"step":"load","context":0,"from":"cpu",)"
                      R"("to":"cuda:0","stream":"copy","bytes":64})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("name":"step 1","cat":"step")"), std::string::npos);
  EXPECT_NE(json.find(R"j("name":"cuda:0 kernels (on ?)")j"),
            std::string::npos);
  EXPECT_EQ(json.find("k7"), std::string::npos);
  EXPECT_NE(json.find(R"("locus_dropped_events","pid":1,"args":{"count":0})"),
            std::string::npos);
}

TEST(Trace, IsOffWithoutAPath) {
  unsetenv("LOCUS_TRACE");
  Trace trace;
  trace.start(nullptr);
  EXPECT_FALSE(trace.on());
  trace.kernel(0, 1, 1, 1, Trace::Clock::now()); // ignored
}
