// signing.h - Ed25519 signatures of artifacts, through libsodium.
//
// libsodium (Debian's libsodium23) is loaded with dlopen the first time a
// key is made, an artifact signed or a signature checked, so the runtime
// still links libc, libstdc++ and libdl only, and a deployment that checks
// no signature needs no libsodium. The prototypes below are libsodium's
// stable ABI (soname libsodium.so.23).
#ifndef LOCUS_RUNTIME_SIGNING_H
#define LOCUS_RUNTIME_SIGNING_H

#include "locus/locus_runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace locus::rt {

constexpr size_t kDigestBytes = 64, kSignatureBytes = 64;

/// The bytes an artifact's signature covers, hashed (BLAKE2b-512): the
/// file up to `signedEnd`, its checksum field (8 bytes at `checksumAt`)
/// read as zeros. UNAVAILABLE when libsodium cannot be loaded.
locus_status_t artifactDigest(const unsigned char *bytes, uint64_t signedEnd,
                              size_t checksumAt,
                              unsigned char digest[kDigestBytes]);

/// Signs `digest` with a secret key.
locus_status_t signDigest(const unsigned char digest[kDigestBytes],
                          const unsigned char secretKey[LOCUS_SECRET_KEY_BYTES],
                          unsigned char signature[kSignatureBytes]);

/// Whether `signature` is `publicKey`'s over `digest`.
locus_status_t
verifyDigest(const unsigned char digest[kDigestBytes],
             const unsigned char signature[kSignatureBytes],
             const unsigned char publicKey[LOCUS_PUBLIC_KEY_BYTES],
             bool &valid);

/// Reads a secret key file that locus_key_generate wrote.
locus_status_t readSecretKey(const char *path,
                             unsigned char out[LOCUS_SECRET_KEY_BYTES]);

/// A key's name in messages: the hex of its first 8 bytes.
std::string
keyFingerprint(const unsigned char publicKey[LOCUS_PUBLIC_KEY_BYTES]);

} // namespace locus::rt

#endif
