// artifact.cpp - the artifact container: writing, and loading that never
// trusts a byte before checking it.

#include "file_io.h"
#include "guard.h"
#include "signing.h"
#include "status_impl.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using locus::rt::makeStatus;

struct locus_artifact_s {
  // The runtime has no exceptions: memory comes from nothrow new, so running
  // out of it is a status, not an abort.
  std::unique_ptr<unsigned char[]> bytes;
  size_t size = 0;
  locus_arch_t arch = LOCUS_ARCH_ANY;
  struct Section {
    uint32_t kind;
    uint64_t offset, size;
  };
  std::vector<Section> sections;
  // The signature section's offset: the file's last bytes; 0 if unsigned.
  uint64_t signatureAt = 0;
};

namespace {

constexpr unsigned char kMagic[8] = {'L', 'O', 'C', 'U', 'S', 'A', 'R', 'T'};
constexpr uint64_t kHeaderSize = 64, kEntrySize = 24, kAlign = 16;
// Header fields by offset.
constexpr size_t kVersionAt = 8, kHeaderSizeAt = 12, kFileSizeAt = 16,
                 kCountAt = 24, kArchAt = 28, kChecksumAt = 32;
constexpr uint32_t kMaxSections = 64;
// The signature section: u32 algorithm, u32 zero, the signer's public key,
// the signature of the bytes before the section (signing.h).
constexpr uint32_t kEd25519Blake2b = 1;
constexpr uint64_t kSignatureSize =
    8 + LOCUS_PUBLIC_KEY_BYTES + locus::rt::kSignatureBytes;

void put32(unsigned char *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char *b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

/// FNV-1a over the file, the checksum field read as zeros.
uint64_t checksum(const unsigned char *bytes, size_t size) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    unsigned char c = i >= kChecksumAt && i < kChecksumAt + 8 ? 0 : bytes[i];
    h = (h ^ c) * 0x100000001B3ULL;
  }
  return h;
}

const char *kindName(uint32_t kind) {
  switch (kind) {
  case LOCUS_SECTION_GRAPH:
    return "graph";
  case LOCUS_SECTION_PLAN:
    return "plan";
  case LOCUS_SECTION_HOST_CODE:
    return "host code";
  case LOCUS_SECTION_PTX:
    return "ptx";
  case LOCUS_SECTION_METADATA:
    return "metadata";
  case LOCUS_SECTION_STATE:
    return "state";
  case LOCUS_SECTION_SIGNATURE:
    return "signature";
  default:
    return nullptr;
  }
}

const char *archName(uint32_t arch) {
  switch (arch) {
  case LOCUS_ARCH_ANY:
    return "any";
  case LOCUS_ARCH_X86_64:
    return "x86-64";
  case LOCUS_ARCH_AARCH64:
    return "aarch64";
  default:
    return "unknown";
  }
}

locus_status_t parse(locus_artifact_s &a) {
  const unsigned char *b = a.bytes.get();
  const uint64_t size = a.size;
  if (size < kHeaderSize)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "not a Locus artifact: %llu bytes, shorter than the "
                      "64-byte header",
                      static_cast<unsigned long long>(size));
  if (std::memcmp(b, kMagic, sizeof kMagic) != 0)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "not a Locus artifact: the file does not start with "
                      "LOCUSART");
  uint32_t version = get32(b + kVersionAt);
  if (version != LOCUS_ARTIFACT_FORMAT_VERSION)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "artifact format version %u; this runtime reads "
                      "version %u (recompile the model with a matching "
                      "locus-compile)",
                      version, LOCUS_ARTIFACT_FORMAT_VERSION);
  if (get32(b + kHeaderSizeAt) != kHeaderSize)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "corrupt artifact: header size %u, expected 64",
                      get32(b + kHeaderSizeAt));
  uint64_t fileSize = get64(b + kFileSizeAt);
  if (fileSize != size)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "%s artifact: the header says %llu bytes, there are "
                      "%llu",
                      size < fileSize ? "truncated" : "corrupt",
                      static_cast<unsigned long long>(fileSize),
                      static_cast<unsigned long long>(size));
  if (get64(b + kChecksumAt) != checksum(b, size))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "corrupt artifact: checksum mismatch");
  // From here on the bytes are what a writer wrote; still check every bound.
  uint32_t count = get32(b + kCountAt);
  if (count > kMaxSections || kHeaderSize + count * kEntrySize > size)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "corrupt artifact: %u sections do not fit", count);
  uint32_t arch = get32(b + kArchAt);
  if (!std::strcmp(archName(arch), "unknown"))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "corrupt artifact: unknown architecture %u", arch);
  a.arch = static_cast<locus_arch_t>(arch);
  if (a.arch != LOCUS_ARCH_ANY && a.arch != locus_host_arch())
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the artifact's host code is for %s; this machine is %s",
                      archName(a.arch), archName(locus_host_arch()));
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char *e = b + kHeaderSize + i * kEntrySize;
    locus_artifact_s::Section s{get32(e), get64(e + 8), get64(e + 16)};
    if (!kindName(s.kind))
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "corrupt artifact: section %u has unknown kind %u", i,
                        s.kind);
    if (s.offset > size || s.size > size - s.offset)
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "corrupt artifact: the %s section lies outside the "
                        "file",
                        kindName(s.kind));
    for (const auto &other : a.sections)
      if (other.kind == s.kind)
        return makeStatus(LOCUS_STATUS_DATA_LOSS,
                          "corrupt artifact: two %s sections",
                          kindName(s.kind));
    if (s.kind == LOCUS_SECTION_SIGNATURE) {
      // Last, in the table and in the file, so that it signs all the rest.
      if (i + 1 != count || s.size != kSignatureSize ||
          s.offset + s.size != size || get32(b + s.offset) != kEd25519Blake2b ||
          get32(b + s.offset + 4))
        return makeStatus(LOCUS_STATUS_DATA_LOSS,
                          "corrupt artifact: a malformed signature section");
      a.signatureAt = s.offset;
    }
    a.sections.push_back(s);
  }
  return nullptr;
}

/// Lays out an artifact of `sections` in `buffer`, signed with `secretKey`
/// when it is given; its size in `size`.
locus_status_t build(locus_arch_t arch, const locus_section_t *sections,
                     size_t count, const unsigned char *secretKey,
                     std::unique_ptr<unsigned char[]> &buffer, uint64_t &size) {
  if (count > kMaxSections - 1 || !std::strcmp(archName(arch), "unknown"))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "locus_artifact_write: %zu sections or architecture %d",
                      count, static_cast<int>(arch));
  for (size_t i = 0; i < count; ++i) {
    if (!kindName(sections[i].kind) ||
        sections[i].kind == LOCUS_SECTION_SIGNATURE ||
        (sections[i].size && !sections[i].data))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_write: section %zu is invalid", i);
    for (size_t j = 0; j < i; ++j)
      if (sections[j].kind == sections[i].kind)
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "locus_artifact_write: two %s sections",
                          kindName(sections[i].kind));
  }
  const size_t entries = count + (secretKey ? 1 : 0);
  uint64_t offset = kHeaderSize + entries * kEntrySize;
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < entries; ++i) {
    offset = (offset + kAlign - 1) / kAlign * kAlign;
    offsets.push_back(offset);
    offset += i < count ? sections[i].size : kSignatureSize;
  }
  buffer.reset(new (std::nothrow) unsigned char[offset]());
  if (!buffer)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "locus_artifact_write: %llu bytes",
                      static_cast<unsigned long long>(offset));
  unsigned char *b = buffer.get();
  std::memcpy(b, kMagic, sizeof kMagic);
  put32(b, kVersionAt, LOCUS_ARTIFACT_FORMAT_VERSION);
  put32(b, kHeaderSizeAt, kHeaderSize);
  put64(b, kFileSizeAt, offset);
  put32(b, kCountAt, static_cast<uint32_t>(entries));
  put32(b, kArchAt, static_cast<uint32_t>(arch));
  for (size_t i = 0; i < entries; ++i) {
    size_t e = kHeaderSize + i * kEntrySize;
    bool signature = i == count;
    put32(b, e,
          signature ? static_cast<uint32_t>(LOCUS_SECTION_SIGNATURE)
                    : static_cast<uint32_t>(sections[i].kind));
    put64(b, e + 8, offsets[i]);
    put64(b, e + 16, signature ? kSignatureSize : sections[i].size);
    if (!signature && sections[i].size)
      std::memcpy(b + offsets[i], sections[i].data, sections[i].size);
  }
  if (secretKey) {
    // The checksum field is still zero, as the digest reads it.
    unsigned char *sig = b + offsets[count];
    unsigned char digest[locus::rt::kDigestBytes];
    if (locus_status_t s =
            locus::rt::artifactDigest(b, offsets[count], kChecksumAt, digest))
      return s;
    put32(sig, 0, kEd25519Blake2b);
    // An Ed25519 secret key in libsodium's form ends with its public key.
    std::memcpy(sig + 8, secretKey + 32, LOCUS_PUBLIC_KEY_BYTES);
    if (locus_status_t s = locus::rt::signDigest(
            digest, secretKey, sig + 8 + LOCUS_PUBLIC_KEY_BYTES))
      return s;
  }
  put64(b, kChecksumAt, checksum(b, offset));
  size = offset;
  return nullptr;
}

/// Takes `bytes` and checks them; the artifact, or a status and nothing.
locus_status_t adopt(std::unique_ptr<unsigned char[]> bytes, size_t size,
                     locus_artifact_t **out_artifact) {
  auto artifact = std::make_unique<locus_artifact_s>();
  artifact->bytes = std::move(bytes);
  artifact->size = size;
  if (locus_status_t status = parse(*artifact))
    return status;
  *out_artifact = artifact.release();
  return nullptr;
}

} // namespace

extern "C" {

locus_arch_t locus_host_arch(void) {
#if defined(__x86_64__)
  return LOCUS_ARCH_X86_64;
#elif defined(__aarch64__)
  return LOCUS_ARCH_AARCH64;
#else
  return LOCUS_ARCH_ANY;
#endif
}

locus_status_t locus_artifact_write(const char *path, locus_arch_t arch,
                                    const locus_section_t *sections,
                                    size_t count) {
  LOCUS_GUARD({
    if (!path || (count && !sections))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_write: NULL argument");
    std::unique_ptr<unsigned char[]> buffer;
    uint64_t size = 0;
    if (locus_status_t s = build(arch, sections, count, nullptr, buffer, size))
      return s;
    return locus::rt::writeFileAtomic(path, buffer.get(), size);
  });
}

locus_status_t locus_artifact_write_memory(locus_arch_t arch,
                                           const locus_section_t *sections,
                                           size_t count, void **out_data,
                                           size_t *out_size) {
  LOCUS_GUARD({
    if ((count && !sections) || !out_data || !out_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_write_memory: NULL argument");
    *out_data = nullptr;
    *out_size = 0;
    std::unique_ptr<unsigned char[]> buffer;
    uint64_t size = 0;
    if (locus_status_t s = build(arch, sections, count, nullptr, buffer, size))
      return s;
    void *copy = std::malloc(size);
    if (!copy)
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                        "locus_artifact_write_memory: %llu bytes",
                        static_cast<unsigned long long>(size));
    std::memcpy(copy, buffer.get(), size);
    *out_data = copy;
    *out_size = size;
    return nullptr;
  });
}

locus_status_t locus_artifact_write_signed(const char *path, locus_arch_t arch,
                                           const locus_section_t *sections,
                                           size_t count,
                                           const char *secret_key_path) {
  LOCUS_GUARD({
    if (!path || (count && !sections) || !secret_key_path)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_write_signed: NULL argument");
    unsigned char key[LOCUS_SECRET_KEY_BYTES];
    if (locus_status_t s = locus::rt::readSecretKey(secret_key_path, key))
      return s;
    std::unique_ptr<unsigned char[]> buffer;
    uint64_t size = 0;
    locus_status_t s = build(arch, sections, count, key, buffer, size);
    std::memset(key, 0, sizeof key);
    if (s)
      return s;
    return locus::rt::writeFileAtomic(path, buffer.get(), size);
  });
}

locus_status_t locus_artifact_signer(const locus_artifact_t *artifact,
                                     locus_public_key_t *out_key) {
  if (!artifact || !out_key)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "locus_artifact_signer: NULL argument");
  if (!artifact->signatureAt)
    return makeStatus(LOCUS_STATUS_NOT_FOUND, "the artifact is not signed");
  std::memcpy(out_key->bytes, artifact->bytes.get() + artifact->signatureAt + 8,
              LOCUS_PUBLIC_KEY_BYTES);
  return nullptr;
}

locus_status_t locus_artifact_verify(const locus_artifact_t *artifact,
                                     const locus_public_key_t *trusted_keys,
                                     size_t count) {
  LOCUS_GUARD({
    if (!artifact || !trusted_keys || !count)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_verify: no artifact or no keys");
    if (!artifact->signatureAt)
      return makeStatus(LOCUS_STATUS_PERMISSION_DENIED,
                        "the artifact is not signed, and only artifacts "
                        "signed by a trusted key may load (sign it with "
                        "locus-compile --sign-key)");
    const unsigned char *sig = artifact->bytes.get() + artifact->signatureAt;
    const unsigned char *signer = sig + 8;
    std::string name = locus::rt::keyFingerprint(signer);
    const locus_public_key_t *trusted = nullptr;
    for (size_t i = 0; i < count && !trusted; ++i)
      if (!std::memcmp(trusted_keys[i].bytes, signer, LOCUS_PUBLIC_KEY_BYTES))
        trusted = &trusted_keys[i];
    if (!trusted)
      return makeStatus(LOCUS_STATUS_PERMISSION_DENIED,
                        "the artifact is signed by key %s, which is not one "
                        "of the %zu trusted keys",
                        name.c_str(), count);
    unsigned char digest[locus::rt::kDigestBytes];
    if (locus_status_t s = locus::rt::artifactDigest(
            artifact->bytes.get(), artifact->signatureAt, kChecksumAt, digest))
      return s;
    bool valid = false;
    if (locus_status_t s = locus::rt::verifyDigest(
            digest, sig + 8 + LOCUS_PUBLIC_KEY_BYTES, trusted->bytes, valid))
      return s;
    if (!valid)
      return makeStatus(LOCUS_STATUS_PERMISSION_DENIED,
                        "the artifact's signature by key %s does not match "
                        "its contents: it was changed after it was signed",
                        name.c_str());
    return nullptr;
  });
}

locus_status_t locus_artifact_load_memory(const void *data, size_t size,
                                          locus_artifact_t **out_artifact) {
  LOCUS_GUARD({
    if (!out_artifact || (size && !data))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_load_memory: NULL argument");
    *out_artifact = nullptr;
    std::unique_ptr<unsigned char[]> bytes(
        new (std::nothrow) unsigned char[size ? size : 1]);
    if (!bytes)
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                        "loading an artifact of %zu bytes", size);
    if (size)
      std::memcpy(bytes.get(), data, size);
    return adopt(std::move(bytes), size, out_artifact);
  });
}

locus_status_t locus_artifact_load(const char *path,
                                   locus_artifact_t **out_artifact) {
  LOCUS_GUARD({
    if (!path || !out_artifact)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_load: NULL argument");
    *out_artifact = nullptr;
    std::unique_ptr<unsigned char[]> bytes;
    size_t size = 0;
    if (locus_status_t s = locus::rt::readFile(path, SIZE_MAX, bytes, size))
      return s;
    locus_status_t status = adopt(std::move(bytes), size, out_artifact);
    if (!status)
      return nullptr;
    locus_status_t named = makeStatus(locus_status_code(status), "%s: %s", path,
                                      locus_status_message(status));
    locus_status_free(status);
    return named;
  });
}

void locus_artifact_release(locus_artifact_t *artifact) { delete artifact; }

locus_arch_t locus_artifact_arch(const locus_artifact_t *artifact) {
  return artifact ? artifact->arch : LOCUS_ARCH_ANY;
}

locus_status_t locus_artifact_section(const locus_artifact_t *artifact,
                                      locus_section_kind_t kind,
                                      const void **out_data, size_t *out_size) {
  LOCUS_GUARD({
    if (!artifact || !out_data || !out_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_artifact_section: NULL argument");
    for (const auto &s : artifact->sections)
      if (s.kind == static_cast<uint32_t>(kind)) {
        *out_data = artifact->bytes.get() + s.offset;
        *out_size = s.size;
        return nullptr;
      }
    const char *name = kindName(kind);
    return makeStatus(LOCUS_STATUS_NOT_FOUND, "the artifact has no %s section",
                      name ? name : "such");
  });
}

} // extern "C"
