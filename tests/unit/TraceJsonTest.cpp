// TraceJsonTest.cpp - the runtime's JSON strings, kernel sources and trace
// events: any bytes (a hostile artifact's kernel source included) become
// valid JSON, valid UTF-8 passes through, the records of a kernel's source
// read back as the compiler wrote them, and a trace holds each event with
// its step and its kernel's ops.

#include "json.h"
#include "kernel_source.h"
#include "trace.h"

#include "locus/abi.h"

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
  std::vector<KernelSource> sources = {
      parseKernelSource("2\tlocus.add\t\"evil\xFF.py:3\tblock\"\tnamed\n")};
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
  EXPECT_NE(json.find(R"("source":"locus.add at \"evil)"
                      "\xEF\xBF\xBD"
                      R"j(.py:3 in block\" (x2)","ops":[{"op":"locus.add",)j"
                      R"("count":2,"at":"\"evil)"
                      "\xEF\xBF\xBD"
                      R"(.py:3","layer":"block\"","layer_kind":"named"}]})"),
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

TEST(KernelSource, ReadsTheRecordsTheCompilerWrites) {
  KernelSource source = parseKernelSource(
      "1\tlocus.conv2d\tm.onnx: node '/l1/Conv' (Conv)\tl1\tonnx\n"
      "2\tlocus.relu\t/src/m.cpp:15\tblock.0\tnamed\n"
      "1\tlocus.add\t/src/m.cpp:24\tm.cpp:24\tcaller\n"
      "1\tlocus.mul\t\t\t\n");
  ASSERT_EQ(source.ops.size(), 4u);
  EXPECT_EQ(source.ops[1].count, 2u);
  EXPECT_EQ(source.ops[1].op, "locus.relu");
  EXPECT_EQ(source.ops[1].at, "/src/m.cpp:15");
  EXPECT_EQ(source.ops[1].layer, "block.0");
  EXPECT_EQ(source.ops[1].kind, "named");
  EXPECT_EQ(source.ops[0].layer, "l1");
  EXPECT_EQ(source.ops[2].kind, "caller");
  // The layer is said in the text when a named layer recorded the op.
  EXPECT_EQ(source.text, "locus.conv2d at m.onnx: node '/l1/Conv' (Conv); "
                         "locus.relu at /src/m.cpp:15 in block.0 (x2); "
                         "locus.add at /src/m.cpp:24; locus.mul");
  EXPECT_TRUE(source.has("locus.conv2d"));
  EXPECT_FALSE(source.has("locus.conv2d_input_grad"));
}

TEST(KernelSource, ShowsALineOfAnotherFormAsItIs) {
  // An older artifact's text, a cut list, and records that break the form:
  // too few or too many fields, a count that is no number or zero.
  KernelSource source =
      parseKernelSource("locus.linear at m.cpp:7; locus.relu at m.cpp:8\n"
                        "1\tlocus.add\tm.cpp:3\n"
                        "1\tlocus.add\tm.cpp:3\t\t\textra\n"
                        "x\tlocus.add\t\t\t\n"
                        "0\tlocus.add\t\t\t\n"
                        "\n...\n");
  ASSERT_EQ(source.ops.size(), 6u);
  for (const SourceOp &op : source.ops)
    EXPECT_EQ(op.count, 0u) << op.op;
  EXPECT_EQ(source.ops[0].op, "locus.linear at m.cpp:7; locus.relu at m.cpp:8");
  EXPECT_EQ(source.ops.back().op, "...");
  EXPECT_FALSE(source.has("locus.add"));
  // An older artifact's text still says which ops its kernel runs.
  EXPECT_TRUE(source.has("locus.relu"));
  EXPECT_TRUE(source.has("locus.linear"));
  EXPECT_FALSE(source.has("locus.lin"));
}

TEST(KernelSource, ReadsAtMostTheLongestSource) {
  std::string record = "1\tlocus.add\tm.cpp:3\t\t\n";
  std::string text;
  while (text.size() < 2 * LOCUS_ABI_MAX_SOURCE_BYTES)
    text += record;
  KernelSource source = parseKernelSource(text);
  size_t whole = (LOCUS_ABI_MAX_SOURCE_BYTES - 1) / record.size();
  ASSERT_GE(source.ops.size(), whole);
  EXPECT_LE(source.ops.size(), whole + 1); // and the cut line, as it is
  EXPECT_EQ(source.ops.front().count, 1u);
  EXPECT_EQ(parseKernelSource("").ops.size(), 0u);
}
