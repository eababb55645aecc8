// ArtifactTest.cpp - the artifact container: a round trip, and every kind of
// damage -- each single byte flipped, every truncation, another version or
// architecture, random mutations -- fails with a clear status, never a crash,
// and never loads different contents.

#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct Status {
  locus_status_t s = nullptr;
  ~Status() { locus_status_free(s); }
  locus_status_code_t code() const { return locus_status_code(s); }
  std::string message() const { return locus_status_message(s); }
};

std::string tempPath(const std::string &name) {
  // One file per process: ctest runs the cases of this file in parallel,
  // and a shared path let one case read a file another was rewriting.
  return ::testing::TempDir() + "/locus_" + std::to_string(::getpid()) + "_" +
         name;
}

std::vector<unsigned char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
}

const std::string kGraph = "locus.graph @g { ... }";
const std::string kPlan = "plan: launch k0; copy 1 -> 2";
const std::vector<unsigned char> kCode = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3, 4};

std::vector<unsigned char> writeSample(locus_arch_t arch) {
  locus_section_t sections[] = {
      {LOCUS_SECTION_GRAPH, kGraph.data(), kGraph.size()},
      {LOCUS_SECTION_PLAN, kPlan.data(), kPlan.size()},
      {LOCUS_SECTION_HOST_CODE, kCode.data(), kCode.size()},
  };
  std::string path = tempPath("sample.locus");
  Status status{locus_artifact_write(path.c_str(), arch, sections, 3)};
  EXPECT_EQ(status.s, nullptr) << status.message();
  return readFile(path);
}

/// Loads `bytes`: OK only with exactly the sample's sections; otherwise the
/// status code.
locus_status_code_t loadAndCompare(const std::vector<unsigned char> &bytes,
                                   std::string *message = nullptr) {
  locus_artifact_t *artifact = nullptr;
  Status status{
      locus_artifact_load_memory(bytes.data(), bytes.size(), &artifact)};
  if (message)
    *message = status.message();
  if (status.s) {
    EXPECT_EQ(artifact, nullptr);
    return status.code();
  }
  const void *data;
  size_t size;
  Status graph{
      locus_artifact_section(artifact, LOCUS_SECTION_GRAPH, &data, &size)};
  EXPECT_EQ(graph.s, nullptr);
  EXPECT_EQ(std::string(static_cast<const char *>(data), size), kGraph);
  Status code{
      locus_artifact_section(artifact, LOCUS_SECTION_HOST_CODE, &data, &size)};
  EXPECT_EQ(code.s, nullptr);
  EXPECT_EQ(std::vector<unsigned char>(
                static_cast<const unsigned char *>(data),
                static_cast<const unsigned char *>(data) + size),
            kCode);
  locus_artifact_release(artifact);
  return LOCUS_STATUS_OK;
}

TEST(Artifact, RoundTrip) {
  std::vector<unsigned char> bytes = writeSample(locus_host_arch());
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(std::memcmp(bytes.data(), "LOCUSART", 8), 0);
  EXPECT_EQ(loadAndCompare(bytes), LOCUS_STATUS_OK);

  locus_artifact_t *artifact = nullptr;
  Status load{locus_artifact_load(tempPath("sample.locus").c_str(), &artifact)};
  ASSERT_EQ(load.s, nullptr) << load.message();
  EXPECT_EQ(locus_artifact_arch(artifact), locus_host_arch());
  const void *data;
  size_t size;
  Status plan{
      locus_artifact_section(artifact, LOCUS_SECTION_PLAN, &data, &size)};
  EXPECT_EQ(std::string(static_cast<const char *>(data), size), kPlan);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 16, 0u) << "aligned";
  Status ptx{locus_artifact_section(artifact, LOCUS_SECTION_PTX, &data, &size)};
  EXPECT_EQ(ptx.code(), LOCUS_STATUS_NOT_FOUND);
  EXPECT_EQ(ptx.message(), "the artifact has no ptx section");
  locus_artifact_release(artifact);
}

TEST(Artifact, EverySingleByteFlipIsRejected) {
  std::vector<unsigned char> good = writeSample(LOCUS_ARCH_ANY);
  size_t rejected = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::vector<unsigned char> bad = good;
      bad[i] ^= mask;
      locus_status_code_t code = loadAndCompare(bad);
      EXPECT_NE(code, LOCUS_STATUS_OK) << "byte " << i << " ^ " << int(mask);
      rejected +=
          code == LOCUS_STATUS_DATA_LOSS || code == LOCUS_STATUS_UNAVAILABLE;
    }
  EXPECT_EQ(rejected, good.size() * 3);
}

TEST(Artifact, EveryTruncationAndAnyExtraIsRejected) {
  std::vector<unsigned char> good = writeSample(LOCUS_ARCH_ANY);
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<unsigned char> cut(good.begin(), good.begin() + n);
    std::string message;
    ASSERT_EQ(loadAndCompare(cut, &message), LOCUS_STATUS_DATA_LOSS) << n;
    if (n >= 64) {
      EXPECT_NE(message.find("truncated artifact"), std::string::npos)
          << message;
    }
  }
  std::vector<unsigned char> longer = good;
  longer.push_back(0);
  EXPECT_EQ(loadAndCompare(longer), LOCUS_STATUS_DATA_LOSS);
}

TEST(Artifact, AnotherVersionOrArchitectureSaysSo) {
  std::vector<unsigned char> bytes = writeSample(LOCUS_ARCH_ANY);
  bytes[8] = 2; // format version 2
  std::string message;
  EXPECT_EQ(loadAndCompare(bytes, &message), LOCUS_STATUS_UNAVAILABLE);
  EXPECT_NE(message.find("artifact format version 2; this runtime reads "
                         "version 1"),
            std::string::npos)
      << message;
  locus_arch_t other = locus_host_arch() == LOCUS_ARCH_X86_64
                           ? LOCUS_ARCH_AARCH64
                           : LOCUS_ARCH_X86_64;
  EXPECT_EQ(loadAndCompare(writeSample(other), &message),
            LOCUS_STATUS_UNAVAILABLE);
  EXPECT_NE(message.find("host code is for"), std::string::npos) << message;
  EXPECT_EQ(loadAndCompare({'n', 'o', 't', ' ', 'o', 'n', 'e'}, &message),
            LOCUS_STATUS_DATA_LOSS);
  EXPECT_NE(message.find("shorter than the 64-byte header"), std::string::npos);
}

TEST(Artifact, RandomMutationsNeverLoadOtherContents) {
  std::vector<unsigned char> good = writeSample(LOCUS_ARCH_ANY);
  std::mt19937 rng(20261121);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<unsigned char> bad = good;
    int edits = 1 + trial % 8;
    for (int e = 0; e < edits; ++e)
      bad[rng() % bad.size()] = static_cast<unsigned char>(rng());
    if (trial % 5 == 0)
      bad.resize(rng() % (bad.size() + 1));
    // A mutant loads only if no byte actually changed.
    if (loadAndCompare(bad) == LOCUS_STATUS_OK) {
      EXPECT_EQ(bad, good) << "trial " << trial << " loaded changed bytes";
    } else {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1900) << "most mutations change something";
}

TEST(Artifact, MisuseIsAnErrorNotACrash) {
  locus_artifact_t *artifact = nullptr;
  Status missing{locus_artifact_load("/nonexistent/x.locus", &artifact)};
  EXPECT_EQ(missing.code(), LOCUS_STATUS_NOT_FOUND);
  EXPECT_NE(missing.message().find("/nonexistent/x.locus"), std::string::npos);
  Status null{locus_artifact_load(nullptr, &artifact)};
  EXPECT_EQ(null.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_section_t twice[] = {{LOCUS_SECTION_PLAN, "a", 1},
                             {LOCUS_SECTION_PLAN, "b", 1}};
  Status dup{locus_artifact_write(tempPath("dup.locus").c_str(), LOCUS_ARCH_ANY,
                                  twice, 2)};
  EXPECT_EQ(dup.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(dup.message().find("two plan sections"), std::string::npos);
  // A kind no enumerator names, as a damaged caller might pass.
  // NOLINTNEXTLINE(clang-analyzer-optin.core.EnumCastOutOfRange)
  locus_section_t unknown[] = {{static_cast<locus_section_kind_t>(99), "a", 1}};
  Status bad{locus_artifact_write(tempPath("bad.locus").c_str(), LOCUS_ARCH_ANY,
                                  unknown, 1)};
  EXPECT_EQ(bad.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  const void *data;
  size_t size;
  Status none{
      locus_artifact_section(nullptr, LOCUS_SECTION_PLAN, &data, &size)};
  EXPECT_EQ(none.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_artifact_release(nullptr);
}

} // namespace

namespace {

/// FNV-1a over an artifact with its checksum field as zeros, written back:
/// what anyone holding the file can do.
void fixChecksum(std::vector<unsigned char> &bytes) {
  ASSERT_GE(bytes.size(), 40u);
  std::fill_n(bytes.begin() + 32, 8, 0);
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : bytes)
    h = (h ^ c) * 0x100000001B3ULL;
  for (int i = 0; i < 8; ++i)
    bytes[32 + i] = static_cast<unsigned char>(h >> (8 * i));
}

/// The sample's sections, signed with `key`'s secret half.
std::vector<unsigned char> writeSigned(const std::string &key) {
  locus_section_t sections[] = {
      {LOCUS_SECTION_GRAPH, kGraph.data(), kGraph.size()},
      {LOCUS_SECTION_PLAN, kPlan.data(), kPlan.size()},
      {LOCUS_SECTION_HOST_CODE, kCode.data(), kCode.size()},
  };
  std::string path = tempPath("signed.locus");
  Status status{locus_artifact_write_signed(
      path.c_str(), LOCUS_ARCH_ANY, sections, 3, (key + ".key").c_str())};
  EXPECT_EQ(status.s, nullptr) << status.message();
  return readFile(path);
}

/// locus_artifact_verify of `bytes` against `keys`: "" or the message.
std::string verify(const std::vector<unsigned char> &bytes,
                   const std::vector<locus_public_key_t> &keys) {
  locus_artifact_t *artifact = nullptr;
  Status load{
      locus_artifact_load_memory(bytes.data(), bytes.size(), &artifact)};
  if (load.s)
    return "load: " + load.message();
  Status s{locus_artifact_verify(artifact, keys.data(), keys.size())};
  locus_artifact_release(artifact);
  if (!s.s)
    return "";
  EXPECT_EQ(s.code(), LOCUS_STATUS_PERMISSION_DENIED) << s.message();
  return s.message();
}

} // namespace

// A signed artifact verifies against its signer's public key only; any byte
// changed before the signature (checksum made good again) breaks it; a
// signature section anywhere but at the end is malformed.
TEST(Artifact, SignaturesBindTheBytesToTheirSigner) {
  std::string a = tempPath("key-a"), b = tempPath("key-b");
  for (const std::string &k : {a, b}) {
    Status s{locus_key_generate((k + ".key").c_str(), (k + ".pub").c_str())};
    // Without libsodium (a machine that only runs artifacts) signing is
    // UNAVAILABLE with the reason: the test has nothing to check there.
    if (s.code() == LOCUS_STATUS_UNAVAILABLE)
      GTEST_SKIP() << "[SKIP] " << s.message();
    ASSERT_EQ(s.s, nullptr) << s.message();
  }
  locus_public_key_t keyA{}, keyB{};
  ASSERT_EQ(locus_key_read_public((a + ".pub").c_str(), &keyA), nullptr);
  ASSERT_EQ(locus_key_read_public((b + ".pub").c_str(), &keyB), nullptr);
  std::vector<unsigned char> bytes = writeSigned(a);
  EXPECT_EQ(loadAndCompare(bytes), LOCUS_STATUS_OK);

  locus_artifact_t *artifact = nullptr;
  ASSERT_EQ(locus_artifact_load_memory(bytes.data(), bytes.size(), &artifact),
            nullptr);
  locus_public_key_t signer{};
  EXPECT_EQ(locus_artifact_signer(artifact, &signer), nullptr);
  EXPECT_EQ(std::memcmp(signer.bytes, keyA.bytes, sizeof signer.bytes), 0);
  Status noKeys{locus_artifact_verify(artifact, nullptr, 0)};
  EXPECT_EQ(noKeys.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_artifact_release(artifact);

  EXPECT_EQ(verify(bytes, {keyA}), "");
  EXPECT_EQ(verify(bytes, {keyB, keyA}), "");
  EXPECT_NE(verify(bytes, {keyB})
                .find("which is not one of the 1 trusted "
                      "keys"),
            std::string::npos);
  EXPECT_EQ(verify(writeSample(LOCUS_ARCH_ANY), {keyA}),
            "the artifact is not signed, and only artifacts signed by a "
            "trusted key may load (sign it with locus-compile --sign-key)");
  // Every byte before the signature section's own bytes, but the checksum
  // field, is signed: the header, the table, each section.
  const size_t signedEnd = bytes.size() - (8 + 32 + 64);
  for (size_t at = 0; at < signedEnd; ++at) {
    if (at >= 32 && at < 40)
      continue;
    std::vector<unsigned char> changed = bytes;
    changed[at] ^= 0x20;
    fixChecksum(changed);
    std::string why = verify(changed, {keyA});
    EXPECT_NE(why, "") << "byte " << at;
    if (why.empty())
      break;
  }
  // The signature's own bytes: the signer's key names another key, the
  // signature fails, the header fields make it malformed.
  for (size_t at = signedEnd; at < bytes.size(); ++at) {
    std::vector<unsigned char> changed = bytes;
    changed[at] ^= 0x01;
    fixChecksum(changed);
    EXPECT_NE(verify(changed, {keyA}), "") << "byte " << at;
  }

  // The secret key is its owner's alone; a public key is no secret key.
  struct stat st{};
  ASSERT_EQ(::stat((a + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  locus_section_t none[] = {{LOCUS_SECTION_PLAN, kPlan.data(), kPlan.size()}};
  Status wrongKey{locus_artifact_write_signed(tempPath("x.locus").c_str(),
                                              LOCUS_ARCH_ANY, none, 1,
                                              (a + ".pub").c_str())};
  EXPECT_EQ(wrongKey.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(wrongKey.message().find("is not a Locus secret key"),
            std::string::npos);
  // A caller may not write a signature section of its own.
  locus_section_t forged[] = {
      {LOCUS_SECTION_SIGNATURE, kPlan.data(), kPlan.size()}};
  Status own{locus_artifact_write(tempPath("x.locus").c_str(), LOCUS_ARCH_ANY,
                                  forged, 1)};
  EXPECT_EQ(own.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  for (const std::string &k : {a, b}) {
    std::remove((k + ".key").c_str());
    std::remove((k + ".pub").c_str());
  }
}

// An atomic write over a symbolic link replaces the link with the new file
// and leaves the link's target alone; the new file gets the usual mode, not
// the target's (which the link could use to pass on any mode it liked).
TEST(Artifact, AtomicWritesReplaceALinkWithoutFollowingIt) {
  std::string target = tempPath("link-target"), link = tempPath("link");
  {
    std::ofstream(target) << "target";
  }
  ASSERT_EQ(::chmod(target.c_str(), 0755), 0);
  std::remove(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const char data[] = "new";
  ASSERT_EQ(locus_file_write_atomic(link.c_str(), data, 3), nullptr);
  struct stat st{};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  std::ifstream kept(target);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), {}), "target");
  std::remove(link.c_str());
  std::remove(target.c_str());
}

TEST(Artifact, WrittenToMemoryIsTheFileByteForByte) {
  locus_section_t sections[] = {
      {LOCUS_SECTION_GRAPH, kGraph.data(), kGraph.size()},
      {LOCUS_SECTION_PLAN, kPlan.data(), kPlan.size()},
      {LOCUS_SECTION_HOST_CODE, kCode.data(), kCode.size()},
  };
  void *data = nullptr;
  size_t size = 0;
  Status status{locus_artifact_write_memory(LOCUS_ARCH_X86_64, sections, 3,
                                            &data, &size)};
  ASSERT_EQ(status.s, nullptr) << status.message();
  const auto *bytes = static_cast<const unsigned char *>(data);
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + size),
            writeSample(LOCUS_ARCH_X86_64));
  locus_free(data);
  // The file writer's checks, and nothing returned on failure.
  locus_section_t twice[] = {{LOCUS_SECTION_PLAN, "a", 1},
                             {LOCUS_SECTION_PLAN, "b", 1}};
  data = &size;
  Status dup{
      locus_artifact_write_memory(LOCUS_ARCH_ANY, twice, 2, &data, &size)};
  EXPECT_EQ(dup.code(), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(size, 0u);
  Status null{
      locus_artifact_write_memory(LOCUS_ARCH_ANY, sections, 3, nullptr, &size)};
  EXPECT_EQ(null.code(), LOCUS_STATUS_INVALID_ARGUMENT);
}
