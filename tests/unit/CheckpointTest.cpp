// Checkpoints with the runtime alone: state saved as safetensors and loaded
// back (strict, partial, by name), other dtypes converted, every mismatch an
// error naming the tensor that changes nothing, damaged files refused
// cleanly at every byte, and saves that leave no half-written file.

#include "PlanBytes.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr uint64_t kBig = 70000; // more than one initialiser chunk

/// y = x + w for 4 floats.
void addKernel(void *const *buffers) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *w = static_cast<const float *>(buffers[1]);
  auto *y = static_cast<float *>(buffers[2]);
  for (int i = 0; i < 4; ++i)
    y[i] = x[i] + w[i];
}

void *resolve(void *, const char *symbol) {
  return std::strcmp(symbol, "add") == 0 ? reinterpret_cast<void *>(&addKernel)
                                         : nullptr;
}

/// A model on the cpu: input x [4]; state w [4] = full(2), v [70000] =
/// normal(0, 1), u [2, 3] = uniform(-1, 1); y = x + w.
locus_model_t *makeModel() {
  PlanBytes p;
  p.u32(LOCUS_PLAN_MAGIC);
  p.u32(LOCUS_PLAN_VERSION);
  p.u32(1); // devices
  p.u8(0);
  p.u32(0);
  p.u32(5); // buffers
  p.f32Buffer(LOCUS_PLAN_INPUT, 0, 4, 0, "x");
  p.f32Buffer(LOCUS_PLAN_ACTIVATION, 0, 4, 64, "");
  p.f32Buffer(LOCUS_PLAN_STATE, 0, 4, 0, "w");
  p.u8(LOCUS_INIT_FULL);
  p.f64(2.0);
  p.f64(2.0);
  p.u64(0);
  p.f32Buffer(LOCUS_PLAN_STATE, 0, kBig, 0, "v");
  p.u8(LOCUS_INIT_NORMAL);
  p.f64(0.0);
  p.f64(1.0);
  p.u64(7);
  // u: rank 2.
  p.u8(LOCUS_PLAN_STATE);
  p.u32(0);
  p.u8(LOCUS_PLAN_F32);
  p.u32(2);
  p.u64(2);
  p.u64(3);
  p.u64(24);
  p.u64(0);
  p.str("u");
  p.u8(LOCUS_INIT_UNIFORM);
  p.f64(-1.0);
  p.f64(1.0);
  p.u64(9);
  p.u64(128); // arena
  p.u32(1);   // kernels
  p.str("add");
  p.u32(0);
  p.u32(0); // imports
  p.u32(0); // load commands
  p.u32(1); // step commands
  p.command(LOCUS_PLAN_LAUNCH, 0, 1, {0, 2, 1});
  p.u32(1); // outputs
  p.str("y");
  p.u32(1);
  p.u32(0); // events
  p.u32(0); // no dynamic sizes
  p.u32(0); // nor buffers they size
  locus_model_t *model = nullptr;
  locus_status_t s =
      locus_model_create_from_plan(p.bytes.data(), p.bytes.size(), nullptr, 0,
                                   resolve, nullptr, nullptr, &model);
  EXPECT_EQ(s, nullptr) << locus_status_message(s);
  return model;
}

std::vector<float> readState(locus_model_t *m, const char *name, size_t n) {
  std::vector<float> out(n);
  locus_status_t s = locus_model_read_state(m, name, out.data(), n * 4);
  EXPECT_EQ(s, nullptr) << locus_status_message(s);
  return out;
}

/// The status's message (and frees it); "" for success.
std::string messageOf(locus_status_t s, locus_status_code_t *code = nullptr) {
  if (code)
    *code = locus_status_code(s);
  if (!s)
    return "";
  std::string m = locus_status_message(s);
  locus_status_free(s);
  return m;
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + name + "_" + std::to_string(::getpid());
}

std::string readFileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A safetensors file of one JSON header and raw data.
std::string safetensors(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i) & 0xFF);
  return out + header + data;
}

std::string floatBytes(const std::vector<float> &v) {
  return {reinterpret_cast<const char *>(v.data()), v.size() * 4};
}

struct Model {
  locus_model_t *m = makeModel();
  ~Model() { locus_model_release(m); }
};

struct Case {
  std::string file, expected;
};

/// Loads each case's file (strict): it must fail with `code` and a message
/// holding the case's text, and leave w as its initialiser made it.
void expectEachFails(Model &m, const std::vector<Case> &cases,
                     locus_status_code_t expectedCode) {
  for (const Case &c : cases) {
    locus_status_code_t code{};
    std::string why =
        messageOf(locus_model_load_state_memory(
                      m.m, c.file.data(), c.file.size(), nullptr, nullptr),
                  &code);
    EXPECT_EQ(code, expectedCode) << why;
    EXPECT_NE(why.find(c.expected), std::string::npos)
        << why << "\nexpected: " << c.expected;
    EXPECT_EQ(readState(m.m, "w", 4), std::vector<float>(4, 2.0f));
  }
}

} // namespace

TEST(Checkpoint, SavedStateLoadsIntoAnotherModelBitForBit) {
  Model a, b;
  std::vector<float> w = {0.5f, -1.25f, 3e-8f, 1e30f};
  ASSERT_EQ(locus_model_write_state(a.m, "w", w.data(), 16), nullptr);
  std::string path = tempPath("ckpt.safetensors");
  ASSERT_EQ(messageOf(locus_model_save_state(a.m, path.c_str())), "");

  // The file is what the format says: little-endian header length, JSON,
  // 8-byte aligned data; and names every tensor with dtype and shape.
  std::string bytes = readFileBytes(path);
  ASSERT_GT(bytes.size(), 8u);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_NE(header.find("\"w\":{\"dtype\":\"F32\",\"shape\":[4],"
                        "\"data_offsets\":[0,16]}"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("\"u\":{\"dtype\":\"F32\",\"shape\":[2,3]"),
            std::string::npos);
  EXPECT_EQ(bytes.size(), 8 + n + (4 + kBig + 6) * 4);

  size_t loaded = 0;
  ASSERT_EQ(
      messageOf(locus_model_load_state(b.m, path.c_str(), nullptr, &loaded)),
      "");
  EXPECT_EQ(loaded, 3u);
  EXPECT_EQ(readState(b.m, "w", 4), w);
  EXPECT_EQ(readState(b.m, "v", kBig), readState(a.m, "v", kBig));
  std::remove(path.c_str());
}

TEST(Checkpoint, ChangedSelectsWhatDiffersFromTheInitialiser) {
  Model a;
  void *data = nullptr;
  size_t size = 1;
  ASSERT_EQ(
      locus_model_save_state_memory(a.m, LOCUS_STATE_CHANGED, &data, &size),
      nullptr);
  EXPECT_EQ(size, 0u); // v is made in chunks: still equal to one long draw
  locus_free(data);

  std::vector<float> v = readState(a.m, "v", kBig);
  v[kBig - 1] += 1.0f;
  ASSERT_EQ(locus_model_write_state(a.m, "v", v.data(), kBig * 4), nullptr);
  ASSERT_EQ(
      locus_model_save_state_memory(a.m, LOCUS_STATE_CHANGED, &data, &size),
      nullptr);
  std::string bytes(static_cast<const char *>(data), size);
  locus_free(data);
  EXPECT_NE(bytes.find("\"v\":"), std::string::npos);
  EXPECT_EQ(bytes.find("\"w\":"), std::string::npos);
  EXPECT_EQ(bytes.find("\"u\":"), std::string::npos);

  // Loaded into a fresh model, partly: v changes, w and u stay.
  Model b;
  locus_state_load_options_t partial{};
  partial.partial = 1;
  size_t loaded = 0;
  ASSERT_EQ(messageOf(locus_model_load_state_memory(
                b.m, bytes.data(), bytes.size(), &partial, &loaded)),
            "");
  EXPECT_EQ(loaded, 1u);
  EXPECT_EQ(readState(b.m, "v", kBig), v);
  // Strict: the other two are missing.
  locus_status_code_t code{};
  std::string why =
      messageOf(locus_model_load_state_memory(b.m, bytes.data(), bytes.size(),
                                              nullptr, nullptr),
                &code);
  EXPECT_EQ(code, LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("missing (the model's, not in the file): w, u"),
            std::string::npos)
      << why;
}

TEST(Checkpoint, OtherFloatDtypesAreConverted) {
  Model m;
  // w as F16: 1, -2, 0.5, 65504; u as BF16; v as F64 (strict needs all).
  std::string f16 = std::string("\x00\x3c\x00\xc0\x00\x38\xff\x7b", 8);
  std::string bf16;
  for (uint16_t h : {0x3F80, 0xC040, 0x0000, 0x3F00, 0x4120, 0xBF80})
    bf16 += std::string{static_cast<char>(h & 0xFF), static_cast<char>(h >> 8)};
  std::vector<double> v(kBig);
  for (size_t i = 0; i < kBig; ++i)
    v[i] = std::sin(double(i)) / 3.0;
  std::string f64(reinterpret_cast<const char *>(v.data()), kBig * 8);
  std::string header =
      "{\"w\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
      "\"u\":{\"shape\":[2,3],\"dtype\":\"BF16\",\"data_offsets\":[8,20]},"
      "\"v\":{\"dtype\":\"F64\",\"shape\":[" +
      std::to_string(kBig) + "],\"data_offsets\":[20," +
      std::to_string(20 + kBig * 8) + "]}}";
  std::string file = safetensors(header, f16 + bf16 + f64);
  ASSERT_EQ(messageOf(locus_model_load_state_memory(
                m.m, file.data(), file.size(), nullptr, nullptr)),
            "");
  EXPECT_EQ(readState(m.m, "w", 4),
            (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}));
  EXPECT_EQ(readState(m.m, "u", 6),
            (std::vector<float>{1.0f, -3.0f, 0.0f, 0.5f, 10.0f, -1.0f}));
  std::vector<float> got = readState(m.m, "v", kBig);
  for (size_t i = 0; i < kBig; i += 997)
    EXPECT_EQ(got[i], static_cast<float>(v[i]));
}

TEST(Checkpoint, MismatchesNameTheTensorAndChangeNothing) {
  Model m;
  std::vector<float> w = {1, 2, 3, 4}, u = {1, 2, 3, 4, 5, 6};
  std::vector<float> v(kBig, 0.25f);
  std::vector<float> before = readState(m.m, "u", 6);
  auto fileWith = [&](const std::string &uShape, const std::string &uType,
                      size_t uBytes, const std::string &extra = "",
                      size_t extraBytes = 0) {
    std::string header =
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"v\":{\"dtype\":\"F32\",\"shape\":[" +
        std::to_string(kBig) + "],\"data_offsets\":[16," +
        std::to_string(16 + kBig * 4) + "]},\"u\":{\"dtype\":\"" + uType +
        "\",\"shape\":" + uShape + ",\"data_offsets\":[" +
        std::to_string(16 + kBig * 4) + "," +
        std::to_string(16 + kBig * 4 + uBytes) + "]}" + extra + "}";
    return safetensors(header, floatBytes(w) + floatBytes(v) +
                                   std::string(uBytes + extraBytes, '\0'));
  };
  std::vector<Case> cases = {
      {fileWith("[3,2]", "F32", 24),
       "tensor 'u' of the state given is F32 [3, 2]; the model's state is "
       "[2, 3] f32"},
      {fileWith("[2,3]", "I64", 48),
       "tensor 'u' of the state given is I64; the model's state is f32"},
      {fileWith("[2,3]", "F32", 24,
                ",\"z\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[" +
                    std::to_string(16 + kBig * 4 + 24) + "," +
                    std::to_string(16 + kBig * 4 + 28) + "]}",
                4),
       "unexpected (in the file, not the model's): z"},
  };
  expectEachFails(m, cases, LOCUS_STATUS_INVALID_ARGUMENT);
  // u was checked after w and v: still as it was.
  EXPECT_EQ(readState(m.m, "u", 6), before);
  // By name: only those, and each must be in both.
  std::string good = fileWith("[2,3]", "F32", 24);
  const char *names[] = {"w"};
  locus_state_load_options_t only{};
  only.names = names;
  only.name_count = 1;
  size_t loaded = 0;
  ASSERT_EQ(messageOf(locus_model_load_state_memory(
                m.m, good.data(), good.size(), &only, &loaded)),
            "");
  EXPECT_EQ(loaded, 1u);
  EXPECT_EQ(readState(m.m, "w", 4), w);
  EXPECT_EQ(readState(m.m, "u", 6), before);
  const char *bad[] = {"w", "q"};
  only.names = bad;
  only.name_count = 2;
  EXPECT_NE(messageOf(locus_model_load_state_memory(
                          m.m, good.data(), good.size(), &only, nullptr))
                .find("cannot load 'q' from the state given: the model has "
                      "no state of that name"),
            std::string::npos);
}

// Two tensors sharing bytes (one read as the other) are malformed; a NaN
// or an infinity in a tensor is refused with its element; nothing changes.
TEST(Checkpoint, OverlapsAndNonFiniteValuesAreRefused) {
  Model m;
  std::vector<float> w = {1, 2, 3, 4}, v(kBig, 0.5f), u = {1, 2, 3, 4, 5, 6};
  std::vector<float> before = readState(m.m, "w", 4);
  auto file = [&](uint64_t uBegin) {
    std::string header =
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"v\":{\"dtype\":\"F32\",\"shape\":[" +
        std::to_string(kBig) + "],\"data_offsets\":[16," +
        std::to_string(16 + kBig * 4) +
        "]},\"u\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[" +
        std::to_string(uBegin) + "," + std::to_string(uBegin + 24) + "]}}";
    return safetensors(header, floatBytes(w) + floatBytes(v) + floatBytes(u));
  };
  std::string overlapping = file(8);
  EXPECT_EQ(messageOf(locus_model_load_state_memory(
                m.m, overlapping.data(), overlapping.size(), nullptr, nullptr)),
            "the state given is not a valid safetensors file: tensors 'w' and "
            "'u' overlap in the data");
  w[2] = std::nanf("");
  std::string nan = file(16 + kBig * 4);
  EXPECT_EQ(messageOf(locus_model_load_state_memory(m.m, nan.data(), nan.size(),
                                                    nullptr, nullptr)),
            "tensor 'w' of the state given holds NaN at element 2 (of 4): the "
            "state would be lost, not loaded");
  w[2] = 3;
  v[7] = INFINITY;
  std::string inf = file(16 + kBig * 4);
  EXPECT_NE(messageOf(locus_model_load_state_memory(m.m, inf.data(), inf.size(),
                                                    nullptr, nullptr))
                .find("tensor 'v' of the state given holds an infinity at "
                      "element 7"),
            std::string::npos);
  EXPECT_EQ(readState(m.m, "w", 4), before);
}

TEST(Checkpoint, MalformedFilesAreDataLossNeverACrash) {
  Model m;
  const std::string t = "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],";
  std::string rank65 = "1";
  for (int i = 1; i < 65; ++i)
    rank65 += ",1";
  std::vector<Case> cases = {
      {std::string("\x05\x00\x00", 3), "shorter than its 8-byte"},
      {safetensors("{}", "").substr(0, 9), "header length 2 exceeds"},
      {safetensors("[]", ""), "expected '{'"},
      {safetensors(t + "\"data_offsets\":[0,16]}", std::string(16, 'a')),
       "expected '}'"},
      {safetensors(t + "\"data_offsets\":[0,12]}}", std::string(16, 'a')),
       "is 16 bytes by its dtype and shape but its data_offsets give 12"},
      {safetensors(t + "\"data_offsets\":[0,16]}}", std::string(15, 'a')),
       "outside the 15 bytes of data"},
      {safetensors(t + "\"data_offsets\":[8,4]}}", std::string(16, 'a')),
       "outside"},
      {safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":"
                   "[0,16]}}",
                   ""),
       "expected a non-negative integer"},
      {safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[4.5],"
                   "\"data_offsets\":[0,16]}}",
                   ""),
       "expected an integer"},
      {safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999]"
                   ",\"data_offsets\":[0,16]}}",
                   ""),
       "a number too large"},
      {safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,"
                   "4294967296],\"data_offsets\":[0,16]}}",
                   ""),
       "has a shape too large"},
      {safetensors(t + "\"data_offsets\":[0,16],\"dtype\":\"F32\"}}",
                   std::string(16, 'a')),
       "unexpected or repeated 'dtype'"},
      {safetensors("{\"w\":{\"dtype\":\"F33\",\"shape\":[],\"data_offsets\":"
                   "[0,4]}}",
                   "abcd"),
       "unknown dtype 'F33'"},
      {safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[]}}", ""),
       "lacks dtype, shape or data_offsets"},
      {safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":"
                   "[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[],"
                   "\"data_offsets\":[0,4]}}",
                   "abcd"),
       "two tensors named 'a'"},
      {safetensors("{\"__metadata__\":{\"k\":1}}", ""), "expected '\"'"},
      {safetensors("{\"a\\u00\":{}}", ""), "a bad \\u escape"},
      {safetensors("{\"\\ud800x\":{}}", ""), "a lone surrogate"},
      {safetensors("{} x", ""), "text after the header's JSON object"},
      {safetensors(t.substr(0, t.size() - 3) + rank65 +
                       "],\"data_offsets\":[0,4]}}",
                   "abcd"),
       "an array too long"},
  };
  expectEachFails(m, cases, LOCUS_STATUS_DATA_LOSS);

  // Every byte of a real file changed, one at a time, three ways: loads or
  // fails with a status.
  void *data = nullptr;
  size_t size = 0;
  ASSERT_EQ(locus_model_save_state_memory(m.m, LOCUS_STATE_ALL, &data, &size),
            nullptr);
  std::string file(static_cast<const char *>(data), size);
  locus_free(data);
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  ASSERT_GT(n, 150u);
  size_t loads = 0, failures = 0;
  for (size_t i = 0; i < 8 + n; ++i)
    for (char c : {'\0', '9', '"'}) {
      std::string bad = file;
      bad[i] = c;
      locus_status_code_t code{};
      messageOf(locus_model_load_state_memory(m.m, bad.data(), bad.size(),
                                              nullptr, nullptr),
                &code);
      ++(code == LOCUS_STATUS_OK ? loads : failures);
      EXPECT_TRUE(code == LOCUS_STATUS_OK || code == LOCUS_STATUS_DATA_LOSS ||
                  code == LOCUS_STATUS_INVALID_ARGUMENT)
          << "byte " << i;
    }
  EXPECT_GT(loads, 0u); // e.g. a digit of the metadata changed
  EXPECT_GT(failures, 0u);
}

TEST(Checkpoint, AFailedSaveLeavesNoFileAndSaysWhy) {
  Model m;
  std::string dir = tempPath("ckpt_dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  // The target is a directory: the rename fails after the temporary file
  // was written, which must go.
  std::string target = dir + "/sub";
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  locus_status_code_t code{};
  std::string why =
      messageOf(locus_model_save_state(m.m, target.c_str()), &code);
  EXPECT_EQ(code, LOCUS_STATUS_UNAVAILABLE);
  EXPECT_NE(why.find("cannot write " + target +
                     ": renaming the temporary file over it: Is a directory"),
            std::string::npos)
      << why;
  DIR *d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d))
    names.emplace_back(e->d_name);
  ::closedir(d);
  EXPECT_EQ(names.size(), 3u); // ., .., sub
  // No such directory: errno's text.
  why = messageOf(
      locus_model_save_state(m.m, (dir + "/none/x.safetensors").c_str()));
  EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
  // A good save replaces an existing file whole.
  std::string path = dir + "/w.safetensors";
  std::ofstream(path) << "old";
  ASSERT_EQ(messageOf(locus_model_save_state(m.m, path.c_str())), "");
  EXPECT_GT(readFileBytes(path).size(), kBig * 4);
  // Loading a missing file or a directory.
  locus_status_code_t code2{};
  messageOf(
      locus_model_load_state(m.m, (dir + "/none").c_str(), nullptr, nullptr),
      &code2);
  EXPECT_EQ(code2, LOCUS_STATUS_NOT_FOUND);
  messageOf(locus_model_load_state(m.m, dir.c_str(), nullptr, nullptr), &code2);
  EXPECT_EQ(code2, LOCUS_STATUS_INVALID_ARGUMENT);
  std::remove(path.c_str());
  ::rmdir(target.c_str());
  ::rmdir(dir.c_str());
}

TEST(Checkpoint, NullArgumentsAreErrors) {
  Model m;
  size_t size = 0;
  void *data = nullptr;
  // NOLINTNEXTLINE(clang-analyzer-optin.core.EnumCastOutOfRange)
  auto badSelection = static_cast<locus_state_select_t>(5);
  locus_status_t statuses[] = {
      locus_model_save_state(nullptr, "x"),
      locus_model_save_state(m.m, nullptr),
      locus_model_save_state_memory(m.m, LOCUS_STATE_ALL, nullptr, &size),
      locus_model_save_state_memory(m.m, badSelection, &data, &size),
      locus_model_load_state_memory(m.m, nullptr, 4, nullptr, nullptr),
      locus_model_load_state(m.m, nullptr, nullptr, nullptr),
  };
  for (locus_status_t s : statuses) {
    locus_status_code_t code{};
    messageOf(s, &code);
    EXPECT_EQ(code, LOCUS_STATUS_INVALID_ARGUMENT);
  }
}
