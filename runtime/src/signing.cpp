// signing.cpp - Ed25519 keys and signatures through libsodium, loaded with
// dlopen; the key files' format.

#include "signing.h"

#include "dl.h"
#include "file_io.h"
#include "guard.h"
#include "status_impl.h"

#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <mutex>

namespace locus::rt {
namespace {

/// The libsodium functions Locus uses (libsodium 1.0.18's prototypes).
struct Sodium {
  int (*init)();
  size_t (*hashStateBytes)();
  int (*hashInit)(void *state, const unsigned char *key, size_t keyLength,
                  size_t outLength);
  int (*hashUpdate)(void *state, const unsigned char *in,
                    unsigned long long length);
  int (*hashFinal)(void *state, unsigned char *out, size_t outLength);
  int (*keyPair)(unsigned char *publicKey, unsigned char *secretKey);
  int (*sign)(unsigned char *signature, unsigned long long *signatureLength,
              const unsigned char *message, unsigned long long length,
              const unsigned char *secretKey);
  int (*verify)(const unsigned char *signature, const unsigned char *message,
                unsigned long long length, const unsigned char *publicKey);
};

/// What a signature signs: this prefix, then the artifact's digest, so that
/// a Locus key's signature means nothing anywhere else.
constexpr char kDomain[] = "Locus artifact signature, Ed25519 over BLAKE2b-512";
constexpr char kSecretHeader[] = "locus-ed25519-secret-key ";
constexpr char kPublicHeader[] = "locus-ed25519-public-key ";

/// The bytes a signature signs: the domain, then the digest.
struct SignedMessage {
  explicit SignedMessage(const unsigned char *digest) {
    std::memcpy(bytes, kDomain, sizeof kDomain);
    std::memcpy(bytes + sizeof kDomain, digest, kDigestBytes);
  }
  unsigned char bytes[sizeof kDomain + kDigestBytes];
};

/// libsodium, loaded once; null (and `why`) when it cannot be.
const Sodium *sodium(std::string &why) {
  static Sodium functions{};
  static bool loaded = false;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    void *library = openFirst({"libsodium.so.23", "libsodium.so"}).handle;
    if (!library) {
      failure = "signatures need libsodium, which is not installed (on "
                "Debian: apt install libsodium23)";
      return;
    }
    Sodium s{};
    if (!bindSymbol(library, s.init, "sodium_init") ||
        !bindSymbol(library, s.hashStateBytes,
                    "crypto_generichash_statebytes") ||
        !bindSymbol(library, s.hashInit, "crypto_generichash_init") ||
        !bindSymbol(library, s.hashUpdate, "crypto_generichash_update") ||
        !bindSymbol(library, s.hashFinal, "crypto_generichash_final") ||
        !bindSymbol(library, s.keyPair, "crypto_sign_keypair") ||
        !bindSymbol(library, s.sign, "crypto_sign_detached") ||
        !bindSymbol(library, s.verify, "crypto_sign_verify_detached") ||
        s.init() < 0) {
      failure = "the libsodium found lacks a function Locus needs";
      return;
    }
    functions = s;
    loaded = true;
  });
  why = failure;
  return loaded ? &functions : nullptr;
}

locus_status_t unavailable(const std::string &why) {
  return makeStatus(LOCUS_STATUS_UNAVAILABLE, "%s", why.c_str());
}

std::string hex(const unsigned char *bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Reads a key file: `header`, `size` bytes in hex, optional white space.
locus_status_t readKeyFile(const char *path, const char *header,
                           const char *what, unsigned char *out, size_t size) {
  std::unique_ptr<unsigned char[]> bytes;
  size_t length = 0;
  if (locus_status_t s = readFile(path, 4096, bytes, length))
    return s;
  std::string text(reinterpret_cast<const char *>(bytes.get()), length);
  size_t headerLength = std::strlen(header);
  size_t end = text.find_last_not_of(" \t\r\n");
  bool ok = text.compare(0, headerLength, header) == 0 &&
            end != std::string::npos && end + 1 == headerLength + 2 * size;
  for (size_t i = 0; ok && i < size; ++i) {
    int high = hexDigit(text[headerLength + 2 * i]),
        low = hexDigit(text[headerLength + 2 * i + 1]);
    ok = high >= 0 && low >= 0;
    out[i] = static_cast<unsigned char>(high * 16 + low);
  }
  std::memset(bytes.get(), 0, length);
  std::fill(text.begin(), text.end(), '\0');
  if (!ok)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "%s is not a Locus %s (locus-compile --generate-key "
                      "writes one)",
                      path, what);
  return nullptr;
}

} // namespace

locus_status_t artifactDigest(const unsigned char *bytes, uint64_t signedEnd,
                              size_t checksumAt,
                              unsigned char digest[kDigestBytes]) {
  std::string why;
  const Sodium *na = sodium(why);
  if (!na)
    return unavailable(why);
  alignas(64) unsigned char state[1024];
  if (na->hashStateBytes() > sizeof state ||
      na->hashInit(state, nullptr, 0, kDigestBytes) != 0)
    return makeStatus(LOCUS_STATUS_INTERNAL, "libsodium's hash failed");
  const unsigned char zeros[8] = {};
  na->hashUpdate(state, bytes, checksumAt);
  na->hashUpdate(state, zeros, sizeof zeros);
  na->hashUpdate(state, bytes + checksumAt + 8,
                 signedEnd - checksumAt - sizeof zeros);
  na->hashFinal(state, digest, kDigestBytes);
  return nullptr;
}

locus_status_t signDigest(const unsigned char digest[kDigestBytes],
                          const unsigned char secretKey[LOCUS_SECRET_KEY_BYTES],
                          unsigned char signature[kSignatureBytes]) {
  std::string why;
  const Sodium *na = sodium(why);
  if (!na)
    return unavailable(why);
  SignedMessage message(digest);
  if (na->sign(signature, nullptr, message.bytes, sizeof message.bytes,
               secretKey) != 0)
    return makeStatus(LOCUS_STATUS_INTERNAL, "libsodium's signing failed");
  return nullptr;
}

locus_status_t
verifyDigest(const unsigned char digest[kDigestBytes],
             const unsigned char signature[kSignatureBytes],
             const unsigned char publicKey[LOCUS_PUBLIC_KEY_BYTES],
             bool &valid) {
  std::string why;
  const Sodium *na = sodium(why);
  if (!na)
    return unavailable(why);
  SignedMessage message(digest);
  valid = na->verify(signature, message.bytes, sizeof message.bytes,
                     publicKey) == 0;
  return nullptr;
}

locus_status_t readSecretKey(const char *path,
                             unsigned char out[LOCUS_SECRET_KEY_BYTES]) {
  if (locus_status_t s = readKeyFile(path, kSecretHeader, "secret key", out,
                                     LOCUS_SECRET_KEY_BYTES))
    return s;
  // As ssh refuses a private key others can read: whoever could read it
  // may have signed with it already.
  struct stat st{};
  if (::stat(path, &st) == 0 && (st.st_mode & 077)) {
    std::memset(out, 0, LOCUS_SECRET_KEY_BYTES);
    return makeStatus(LOCUS_STATUS_PERMISSION_DENIED,
                      "the secret key %s can be read by others (mode %03o); "
                      "make it private with chmod 600",
                      path, static_cast<unsigned>(st.st_mode & 0777));
  }
  return nullptr;
}

std::string
keyFingerprint(const unsigned char publicKey[LOCUS_PUBLIC_KEY_BYTES]) {
  return hex(publicKey, 8);
}

} // namespace locus::rt

using namespace locus::rt;

extern "C" {

locus_status_t locus_key_generate(const char *secret_key_path,
                                  const char *public_key_path) {
  LOCUS_GUARD({
    if (!secret_key_path || !public_key_path)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_key_generate: NULL argument");
    // A new key over an old one would leave every artifact signed with
    // the old one unverifiable: never silently.
    for (const char *path : {secret_key_path, public_key_path}) {
      struct stat st{};
      if (::lstat(path, &st) == 0)
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "%s exists already; a new key pair does not replace "
                          "a key (remove it first if that is what you want)",
                          path);
    }
    std::string why;
    const Sodium *na = sodium(why);
    if (!na)
      return unavailable(why);
    unsigned char publicKey[LOCUS_PUBLIC_KEY_BYTES],
        secretKey[LOCUS_SECRET_KEY_BYTES];
    if (na->keyPair(publicKey, secretKey) != 0)
      return makeStatus(LOCUS_STATUS_INTERNAL, "libsodium made no key pair");
    std::string secret =
                    kSecretHeader + hex(secretKey, sizeof secretKey) + "\n",
                public_ =
                    kPublicHeader + hex(publicKey, sizeof publicKey) + "\n";
    std::memset(secretKey, 0, sizeof secretKey);
    // The secret key is readable by its owner alone, from the moment it
    // exists; the public one first, so that a failure leaves no secret key
    // without its public half.
    locus_status_t s =
        writeFileAtomic(public_key_path, public_.data(), public_.size());
    if (!s)
      s = writeFileAtomic(secret_key_path, secret.data(), secret.size(), 0600);
    std::fill(secret.begin(), secret.end(), '\0');
    return s;
  });
}

locus_status_t locus_key_read_public(const char *path,
                                     locus_public_key_t *out_key) {
  LOCUS_GUARD({
    if (!path || !out_key)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_key_read_public: NULL argument");
    locus_public_key_t key{};
    if (locus_status_t s = readKeyFile(path, kPublicHeader, "public key",
                                       key.bytes, sizeof key.bytes))
      return s;
    *out_key = key;
    return nullptr;
  });
}

} // extern "C"
