// aead_common.h: what the AEAD benchmarks of aesgen_bench share (gcm_bench.cc, AES-GCM;
// gcm_siv_bench.cc, AES-GCM-SIV; otr_bench.cc, AES-OTR beside AES-OCB): the shape of the
// record every iteration seals or opens (its nonces, its AAD), the records an open
// benchmark opens in turn, the ticks-per-record counter, the BoringSSL library dlopen()ed
// beside OpenSSL, libgcrypt's one-time initialisation, and the library versions the
// report's context names.
//
// Header-only (inline), as bench_common.h: the functions with a static local (the loaded
// library, the initialisation) have one instance in the program, however many translation
// units include this.

#ifndef AESGEN_BENCH_AEAD_COMMON_H
#define AESGEN_BENCH_AEAD_COMMON_H

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <gcrypt.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.h"

namespace aesgen_bench {

// Every record: a 12-byte nonce, 13 bytes of AAD, a 16-byte tag.
constexpr size_t kNonceLen = 12;
constexpr size_t kTagLen = 16;
constexpr size_t kAadLen = 13;

// The 13 bytes of additional data of every record (TLS 1.2's length: sequence number,
// type, version, length); their value does not change what sealing costs.
inline const uint8_t *RecordAad() {
  static const uint8_t aad[kAadLen] = {0, 0, 0, 0, 0, 0, 0, 1, 0x17, 0x03, 0x03, 0x05, 0x8c};
  return aad;
}

// TLS 1.3 per-record nonces (RFC 8446, 5.3): the static IV XOR the 64-bit big-endian
// record sequence number, left-padded with zeros to 12 bytes.
class TlsNonces {
 public:
  explicit TlsNonces(uint64_t first_seq = 0) : seq_(first_seq) {
    for (size_t i = 0; i < kNonceLen; i++) iv_[i] = static_cast<uint8_t>(0x3c + i * 11);
  }
  const uint8_t *Next() {
    std::memcpy(nonce_, iv_, kNonceLen);
    for (int i = 0; i < 8; i++) nonce_[4 + i] ^= static_cast<uint8_t>(seq_ >> (56 - 8 * i));
    seq_++;
    return nonce_;
  }

 private:
  uint64_t seq_;
  uint8_t iv_[kNonceLen];
  alignas(16) uint8_t nonce_[kNonceLen];
};

// Fresh random nonces: 12 bytes of a deterministic pseudo-random stream (splitmix64) a
// record, as under random nonces (RFC 8446 does not use them, but QUIC-less protocols
// and many libraries' callers do): every byte changes from record to record, so the
// FACE tables of the GCM kernels (keyed on counter bytes 0, 5 and 10) never serve twice.
class FreshNonces {
 public:
  explicit FreshNonces(uint64_t seed = 0x6a09e667f3bcc908) : state_(seed) {}
  const uint8_t *Next() {
    const uint64_t a = Mix(), b = Mix();
    std::memcpy(nonce_, &a, 8);
    std::memcpy(nonce_ + 8, &b, 4);
    return nonce_;
  }

 private:
  uint64_t Mix() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  alignas(16) uint8_t nonce_[kNonceLen];
};

// Records of `size` bytes sealed before an open benchmark's timed loop, each under a
// nonce of its own (TlsNonces from sequence number 0), for the loop to open in turn: as
// many as fill kRecordsBytes (from kMinRecords to kMaxRecords), so the loop reads about as
// much memory as a seal loop does and no record follows one with its nonce.  `seal`
// writes the record sealed under `nonce` (ciphertext then tag, size + kTagLen bytes) to
// `record`.
class SealedRecords {
 public:
  static constexpr size_t kRecordsBytes = 65536;
  static constexpr size_t kMinRecords = 2, kMaxRecords = 16;

  SealedRecords(size_t size, const std::function<void(const uint8_t *nonce, uint8_t *record)> &seal)
      : count_(std::clamp(kRecordsBytes / (size + kTagLen), kMinRecords, kMaxRecords)),
        stride_((size + kTagLen + 63) & ~size_t{63}), data_(AlignedBuffer(count_ * stride_)),
        nonces_(count_) {
    TlsNonces seq;
    for (size_t i = 0; i < count_; i++) {
      std::memcpy(nonces_[i].bytes, seq.Next(), kNonceLen);
      seal(nonces_[i].bytes, Record(i));
    }
  }
  ~SealedRecords() { std::free(data_); }
  SealedRecords(const SealedRecords &) = delete;
  SealedRecords &operator=(const SealedRecords &) = delete;

  size_t count() const { return count_; }
  const uint8_t *Nonce(size_t i) const { return nonces_[i].bytes; }
  uint8_t *Record(size_t i) { return data_ + i * stride_; }

 private:
  struct Nonce12 {
    uint8_t bytes[kNonceLen];
  };
  size_t count_, stride_;
  uint8_t *data_;
  std::vector<Nonce12> nonces_;
};

// The ticks_per_message counter of the AEAD benchmarks that report one (GCM-SIV, OTR):
// TSC ticks per iteration, one record each.
inline void ReportTicksPerRecord(benchmark::State &state, uint64_t ticks) {
  state.counters["ticks_per_message"] = benchmark::Counter(
      state.iterations() > 0 ? static_cast<double>(ticks) / static_cast<double>(state.iterations())
                             : 0.0);
}

// ---------------------------------------------------------------------------
// BoringSSL
//
// Debian's android-libboringssl, dlopen()ed: its symbols have the same names as OpenSSL's,
// so it is loaded RTLD_LOCAL|RTLD_DEEPBIND and its EVP_AEAD functions looked up by name.
// No BoringSSL header is included (they clash with OpenSSL's): the prototypes are those of
// its aead.h.  The path: $AESGEN_BORINGSSL_LIB, or kBoringSslPath (what the package
// installs: `dpkg -L android-libboringssl`).

constexpr char kBoringSslPath[] = "/usr/lib/x86_64-linux-gnu/android/libcrypto.so.0";

struct BoringSsl {
  using AeadFn = const void *(*)();
  AeadFn aes_128_gcm = nullptr, aes_256_gcm = nullptr;
  // EVP_aead_aes_{128,256}_gcm_siv: null in a BoringSSL without AES-GCM-SIV
  AeadFn aes_128_gcm_siv = nullptr, aes_256_gcm_siv = nullptr;
  void *(*ctx_new)(const void *aead, const uint8_t *key, size_t key_len, size_t tag_len) = nullptr;
  // seal: out = ciphertext || tag; open: in = ciphertext || tag, out = plaintext; 1 or 0
  int (*seal)(const void *ctx, uint8_t *out, size_t *out_len, size_t max_out_len,
              const uint8_t *nonce, size_t nonce_len, const uint8_t *in, size_t in_len,
              const uint8_t *ad, size_t ad_len) = nullptr;
  int (*open)(const void *ctx, uint8_t *out, size_t *out_len, size_t max_out_len,
              const uint8_t *nonce, size_t nonce_len, const uint8_t *in, size_t in_len,
              const uint8_t *ad, size_t ad_len) = nullptr;
  void (*ctx_free)(void *ctx) = nullptr;
  int (*has_aes_hardware)() = nullptr;          // optional
  const char *(*version)(int which) = nullptr;  // OpenSSL_version, optional
  std::string path;
  std::string error;  // why it is not there; empty when loaded
};

template <typename Fn>
bool LookUp(void *handle, const char *symbol, Fn *fn, std::string *error) {
  void *p = dlsym(handle, symbol);
  if (p == nullptr) {
    if (error != nullptr) *error = std::string("no symbol ") + symbol;
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

// The library, loaded on first use and kept for the life of the process.
inline const BoringSsl &LoadBoringSsl() {
  static const BoringSsl lib = [] {
    BoringSsl b;
    const char *env = std::getenv("AESGEN_BORINGSSL_LIB");
    b.path = env != nullptr && *env != '\0' ? env : kBoringSslPath;
    // RTLD_DEEPBIND: its calls to its own functions (EVP_*, CRYPTO_*, OPENSSL_*) must not
    // be bound to OpenSSL's libcrypto, already loaded under the same names.
    void *h = dlopen(b.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (h == nullptr) {
      const char *why = dlerror();
      b.error = std::string("cannot load ") + b.path + ": " + (why ? why : "dlopen failed") +
                " (Debian: apt-get install android-libboringssl-dev, or set "
                "AESGEN_BORINGSSL_LIB)";
      return b;
    }
    void (*library_init)() = nullptr;
    if (LookUp(h, "CRYPTO_library_init", &library_init, nullptr)) library_init();
    if (!LookUp(h, "EVP_aead_aes_128_gcm", &b.aes_128_gcm, &b.error) ||
        !LookUp(h, "EVP_aead_aes_256_gcm", &b.aes_256_gcm, &b.error) ||
        !LookUp(h, "EVP_AEAD_CTX_new", &b.ctx_new, &b.error) ||
        !LookUp(h, "EVP_AEAD_CTX_seal", &b.seal, &b.error) ||
        !LookUp(h, "EVP_AEAD_CTX_open", &b.open, &b.error) ||
        !LookUp(h, "EVP_AEAD_CTX_free", &b.ctx_free, &b.error)) {
      b.error = b.path + ": " + b.error + " (is it BoringSSL?)";
      return b;
    }
    LookUp(h, "EVP_aead_aes_128_gcm_siv", &b.aes_128_gcm_siv, nullptr);
    LookUp(h, "EVP_aead_aes_256_gcm_siv", &b.aes_256_gcm_siv, nullptr);
    LookUp(h, "EVP_has_aes_hardware", &b.has_aes_hardware, nullptr);
    LookUp(h, "OpenSSL_version", &b.version, nullptr);
    return b;  // the handle stays open for the life of the process
  }();
  return lib;
}

// ---------------------------------------------------------------------------
// libgcrypt

// Initialises libgcrypt once (no secure memory: nothing here is a real secret); returns
// why it cannot be used, or "" when it can.
inline const std::string &LibgcryptError() {
  static const std::string error = []() -> std::string {
    if (gcry_check_version(GCRYPT_VERSION) == nullptr)
      return std::string("the library (") + gcry_check_version(nullptr) +
             ") is older than the header (" + GCRYPT_VERSION + ")";
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    return "";
  }();
  return error;
}

// ---------------------------------------------------------------------------
// Google Benchmark context: libgcrypt's version and hardware features, and what BoringSSL
// was loaded from (or why not).

inline void AddAeadPeerContext() {
  benchmark::AddCustomContext("libgcrypt_version", gcry_check_version(nullptr));
  if (char *hw = gcry_get_config(0, "hwflist")) {
    std::string flags = hw;
    gcry_free(hw);
    while (!flags.empty() && (flags.back() == '\n' || flags.back() == ':')) flags.pop_back();
    benchmark::AddCustomContext("libgcrypt_hwflist", flags);
  }
  const BoringSsl &lib = LoadBoringSsl();
  if (!lib.error.empty()) {
    benchmark::AddCustomContext("boringssl", "not loaded: " + lib.error);
    return;
  }
  std::string what = lib.path;
  if (lib.version != nullptr) what += std::string(" (") + lib.version(0) + ")";
  if (lib.has_aes_hardware != nullptr)
    what += lib.has_aes_hardware() ? ", AES hardware in use" : ", no AES hardware";
  benchmark::AddCustomContext("boringssl", what);
}

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_AEAD_COMMON_H
