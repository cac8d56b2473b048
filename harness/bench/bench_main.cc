// bench_main.cc: Google Benchmark program for the kernels of one generated aesgen
// set, beside OpenSSL and Intel's ipsec-mb (x86-64 only); the AES-GCM tables, beside
// libgcrypt and BoringSSL too, are in gcm_bench.cc, AES-GCM-SIV (beside libgcrypt and
// BoringSSL) in gcm_siv_bench.cc, AES-OTR (beside AES-OCB in libgcrypt and OpenSSL) in
// otr_bench.cc, GHASH alone in ghash_bench.cc.
//
// Built once per generated folder (generated/<preset>/) from every .cc of harness/bench/
// (bench_main.cc, gcm_bench.cc, gcm_siv_bench.cc, ghash_bench.cc, otr_bench.cc) with
// -DAESGEN_BENCH_PRESET="<preset>", linked with -lbenchmark -lcrypto -lIPSec_MB -lgcrypt
// -ldl.
//
// Benchmarks are registered at run time, named IMPL/MODE/KEYBITS/SIZE:
//   IMPL     a registry kernel this CPU runs (e.g. aesni-face-r2), `openssl`
//            (EVP_aes_*_ctr, default dispatch), `ipsec-mb-sse`, `ipsec-mb-avx2`,
//            `ipsec-mb-avx512` (job API, IMB_CIPHER_CNTR).  With OPENSSL_ia32cap in
//            the environment only OpenSSL is registered, named `openssl-noaesni`,
//            and the program checks that the variable really masks AES-NI.
//   MODE     stream    one key and IV; each iteration encrypts the next SIZE bytes
//            msg_iv    each iteration: new IV (bytes 1..4 and 12..15 change; bytes
//                      0, 5, 10 stay, so FACE tables stay valid), then SIZE bytes
//            fresh_iv  as msg_iv, but bytes 0, 5 and 10 change too (FACE tables
//                      are rebuilt)
//            setup     SIZE 0: key set-up alone (aesgen init, EVP_EncryptInit_ex
//                      with a key, IMB_AES_KEYEXP_*)
//            first     each iteration: a new key and an IV whose byte 0 differs,
//                      then SIZE bytes: a whole message under a fresh key
//   KEYBITS  128, 192, 256 (aesgen: those its set was generated for)
//   SIZE     stream/msg_iv/fresh_iv: 16 1024 4096 20480 40960;
//            first: 256 512 1024 2048 4096 6144 8192 12288 16384 32768 65536
//
// and IMPL/gcm_seal/KEYBITS/SIZE, KEYBITS 128 and 256, SIZE 64 256 1420 4096 16384:
// one TLS-style record per iteration (new nonce, 13 bytes of AAD, 16-byte tag), IMPL a
// GCM kernel of the set (where aesgen.h defines AESGEN_HAVE_AEAD), `openssl-gcm`,
// `ipsec-mb-{sse,avx2,avx512}-gcm`, `libgcrypt-gcm`, `boringssl-gcm` (gcm_bench.h);
// with OPENSSL_ia32cap set, `openssl-noaesni-gcm` alone.
//
// and IMPL/gcm_siv_seal/KEYBITS/SIZE and IMPL/gcm_siv_open/KEYBITS/SIZE, KEYBITS 128 and
// 256, SIZE 16 64 256 1420 4096 16384: one AES-GCM-SIV record sealed, or opened, per
// iteration (its own nonce, 13 bytes of AAD, 16-byte tag), IMPL a GCM-SIV kernel of the set,
// `libgcrypt-gcm-siv`, `boringssl-gcm-siv` (gcm_siv_bench.h); nothing with OPENSSL_ia32cap
// set.
//
// and IMPL/otr_seal/KEYBITS/SIZE and IMPL/otr_open/KEYBITS/SIZE, KEYBITS 128 and 256, SIZE
// 16 64 256 1420 4096 16384: one AES-OTR record sealed, or opened, per iteration (its own
// 12-byte nonce, 13 bytes of AAD, 16-byte tag), IMPL an OTR kernel of the set (mode "otr",
// v3.1, "otr-v2", "otr-s", "otr-v2-s"), `libgcrypt-ocb`, `openssl-ocb` (AES-OCB, RFC 7253);
// beside them, for
// comparison, IMPL/otr_ref/KEYBITS/SIZE: the set's METHOD-face-none CTR kernel (a new IV,
// SIZE bytes) and METHOD-gcm-none GCM kernel (a record) for aesni, vaes512 and the OTR
// kernels' methods (otr_bench.h); nothing with OPENSSL_ia32cap set.
//
// and, only when asked (--aesgen_what=ghash), IMPL/ghash/128/SIZE: one AAD-only AES-128-GCM
// message of SIZE bytes per iteration, GHASH and little else; IMPL a GCM kernel of the
// set, `openssl-ghash`, `ct-1bit-ghash`, `ct-holes-ghash` (constant-time GHASHs in C
// without a carry-less multiplier), or with OPENSSL_ia32cap set `openssl-noaesni-ghash`
// alone (ghash_bench.h).  Every implementation this CPU or this machine cannot run is
// named on stderr as "skip IMPL: why".
//
// Counters: ticks_per_byte (TSC ticks read with lfence around the whole timing
// loop, / iterations / SIZE); setup reports `ticks` per iteration instead; first
// reports both; gcm_siv_seal, gcm_siv_open, otr_seal, otr_open and otr_ref report
// ticks_per_message (ticks / iterations) beside ticks_per_byte.  Bytes processed are set
// so bytes_per_second is reported.
//
// Before anything is timed, every IMPL/KEYBITS is checked against a one-shot
// OpenSSL encryption (itself checked against the SP 800-38A vectors, for GCM and GHASH
// against the GCM specification's); GCM-SIV against libgcrypt's, else BoringSSL's
// (checked against RFC 8452's vectors); OTR against this program's own AES-OTR (checked
// against specs/aes-otr.md's vectors), OCB against RFC 7253's vectors; a mismatch aborts
// the program naming the implementation.
//
// Flags of our own (removed before Google Benchmark sees the rest):
//   --aesgen_what=ctr,gcm    which benchmarks: the CTR modes (ctr), gcm_seal (gcm),
//                            gcm_siv_seal and gcm_siv_open (gcm-siv), otr_seal, otr_open
//                            and otr_ref (otr), ghash; any of them (default
//                            ctr,gcm,gcm-siv,otr)
//   --aesgen_sizes=16,4096   register only these CTR sizes (setup is always registered)
//   --aesgen_aead_sizes=64,1420  gcm_seal, gcm-siv, otr and ghash sizes (any of 1..65520
//                            bytes), in place of each one's defaults
//   --aesgen_keys=128,256    register only these key sizes
//   --aesgen_list            print the names that would be registered and exit

#include <benchmark/benchmark.h>
#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "aead_common.h"
#include "aesgen.h"
#include "bench_common.h"
#include "gcm_bench.h"
#include "gcm_siv_bench.h"
#include "ghash_bench.h"
#include "otr_bench.h"

#ifndef AESGEN_BENCH_PRESET
#error "compile with -DAESGEN_BENCH_PRESET=\"<preset name>\" (build.ninja does)"
#endif

namespace {

using namespace aesgen_bench;

constexpr size_t kVerifyLen = 4096 + 7;
constexpr size_t kWarmUpLen = 8192;  // two FACE windows: every table entry is filled
const std::vector<size_t> kMessageSizes = {16, 1024, 4096, 20480, 40960};
const std::vector<size_t> kFirstSizes = {256,  512,  1024,  2048,  4096, 6144,
                                         8192, 12288, 16384, 32768, 65536};
static_assert(kBufferLen >= 65536, "the largest SIZE, kVerifyLen and kWarmUpLen fit");

const char kTscNote[] = "ticks are TSC ticks, not core cycles (no core cycle counter in this VM)";

// ---------------------------------------------------------------------------
// IVs
//
// The base IV has its low 32 bits (bytes 12..15) zero.  ipsec-mb's CTR increments
// only those 32 bits, so every IV chosen here keeps them below 2^31: no message of
// up to 64 KiB (4096 blocks) can wrap them.  (The ipsec-mb Impl below also splits a
// message that would wrap, so it stays correct for any IV.)

struct Iv {
  alignas(16) uint8_t bytes[16];
};

Iv BaseIv() {
  Iv iv;
  for (int i = 0; i < 12; i++) iv.bytes[i] = static_cast<uint8_t>(0xc0 + i * 7);
  std::memset(iv.bytes + 12, 0, 4);
  return iv;
}

void StoreBe32(uint8_t *p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

uint32_t LoadBe32(const uint8_t *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The n-th IV of a run of messages: bytes 1..4 and 12..15 change every time; with
// `fresh`, bytes 0, 5 and 10 (the ones FACE tables depend on) change too.
class IvSequence {
 public:
  explicit IvSequence(bool fresh) : fresh_(fresh), iv_(BaseIv()) {}

  const uint8_t *Next() {
    n_++;
    StoreBe32(iv_.bytes + 1, n_);
    StoreBe32(iv_.bytes + 12, (n_ * 0x9e3779b1u) >> 1);  // < 2^31: never wraps
    if (fresh_) {
      iv_.bytes[0] = static_cast<uint8_t>(n_);  // differs from the previous IV's
      iv_.bytes[5] = static_cast<uint8_t>(n_ * 3 + 1);
      iv_.bytes[10] = static_cast<uint8_t>(n_ * 5 + 2);
    }
    return iv_.bytes;
  }

 private:
  bool fresh_;
  Iv iv_;
  uint32_t n_ = 0;
};

// ---------------------------------------------------------------------------
// The implementations, behind one interface
//
// An Impl is one AES-CTR implementation at one key size.  init sets key and IV;
// set_iv restarts the stream under the same key; encrypt continues the stream at
// any byte (in == out allowed), exactly as OpenSSL's EVP_aes_*_ctr does.

class Impl {
 public:
  virtual ~Impl() = default;
  virtual void Init(const uint8_t *key, const uint8_t iv[16]) = 0;
  virtual void SetIv(const uint8_t iv[16]) = 0;
  virtual void Encrypt(uint8_t *out, const uint8_t *in, size_t len) = 0;
};

// A registry kernel of the generated set.
class AesgenImpl final : public Impl {
 public:
  AesgenImpl(const aesgen_kernel &kernel, int key_bits)
      : kernel_(kernel), key_len_(static_cast<size_t>(key_bits) / 8),
        ctx_(AlignedBuffer(kernel.ctx_size)) {}
  ~AesgenImpl() override {
    kernel_.wipe(ctx_);
    std::free(ctx_);
  }

  void Init(const uint8_t *key, const uint8_t iv[16]) override {
    if (kernel_.init(ctx_, key, key_len_, iv) != 0)
      Die(std::string(kernel_.name) + ": init refused a " + std::to_string(key_len_ * 8) +
          "-bit key");
  }
  void SetIv(const uint8_t iv[16]) override { kernel_.set_iv(ctx_, iv); }
  void Encrypt(uint8_t *out, const uint8_t *in, size_t len) override {
    kernel_.xor_stream(ctx_, out, in, len);
  }

 private:
  const aesgen_kernel &kernel_;
  size_t key_len_;
  uint8_t *ctx_;
};

const EVP_CIPHER *OpensslCtrCipher(int key_bits) {
  switch (key_bits) {
    case 128: return EVP_aes_128_ctr();
    case 192: return EVP_aes_192_ctr();
    case 256: return EVP_aes_256_ctr();
  }
  Die("no OpenSSL cipher for " + std::to_string(key_bits) + "-bit keys");
}

// OpenSSL EVP with the cipher chosen once; later calls pass NULL for the cipher so
// init and set_iv cost what reusing a context costs.
class OpensslImpl final : public Impl {
 public:
  explicit OpensslImpl(int key_bits) : ctx_(EVP_CIPHER_CTX_new()) {
    if (ctx_ == nullptr ||
        EVP_EncryptInit_ex(ctx_, OpensslCtrCipher(key_bits), nullptr, nullptr, nullptr) != 1)
      Die("openssl: EVP_EncryptInit_ex failed to set up AES-" + std::to_string(key_bits) +
          "-CTR");
  }
  ~OpensslImpl() override { EVP_CIPHER_CTX_free(ctx_); }

  void Init(const uint8_t *key, const uint8_t iv[16]) override {
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, key, iv) != 1)
      Die("openssl: EVP_EncryptInit_ex (key, iv) failed");
  }
  void SetIv(const uint8_t iv[16]) override {
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, iv) != 1)
      Die("openssl: EVP_EncryptInit_ex (iv) failed");
  }
  void Encrypt(uint8_t *out, const uint8_t *in, size_t len) override {
    int out_len = 0;
    if (EVP_EncryptUpdate(ctx_, out, &out_len, in, static_cast<int>(len)) != 1 ||
        static_cast<size_t>(out_len) != len)
      Die("openssl: EVP_EncryptUpdate failed");
  }

 private:
  EVP_CIPHER_CTX *ctx_;
};

// Adds n to a 128-bit big-endian counter (wrapping at 2^128).
void AddToCounter(uint8_t counter[16], uint64_t n) {
  uint64_t hi, lo;
  std::memcpy(&hi, counter, 8);
  std::memcpy(&lo, counter + 8, 8);
  hi = __builtin_bswap64(hi);
  lo = __builtin_bswap64(lo);
  lo += n;
  if (lo < n) hi++;
  hi = __builtin_bswap64(hi);
  lo = __builtin_bswap64(lo);
  std::memcpy(counter, &hi, 8);
  std::memcpy(counter + 8, &lo, 8);
}

// ipsec-mb through the job API: one CNTR job per message (cipher only, NULL hash,
// 16-byte IV).  The library keeps no stream state between jobs, so this Impl keeps
// the counter of the next block.  ipsec-mb increments only the low 32 bits of the
// counter (no carry into bytes 0..11): a message that would wrap them is split into
// two jobs here, the second with the carry done, so the output always equals
// OpenSSL's.  A call that ends inside a block leaves that block pending; the next
// call encrypts a zero block at that counter to get the rest of its keystream.
class IpsecMbImpl final : public Impl {
 public:
  IpsecMbImpl(std::string name, MbManager mgr, int key_bits)
      : name_(std::move(name)), mgr_(std::move(mgr)), key_bits_(key_bits) {}

  void Init(const uint8_t *key, const uint8_t iv[16]) override {
    IMB_MGR *m = mgr_.get();
    switch (key_bits_) {
      case 128: IMB_AES_KEYEXP_128(m, key, enc_keys_, dec_keys_); break;
      case 192: IMB_AES_KEYEXP_192(m, key, enc_keys_, dec_keys_); break;
      case 256: IMB_AES_KEYEXP_256(m, key, enc_keys_, dec_keys_); break;
      default: Die(name_ + ": no key expansion for " + std::to_string(key_bits_) + " bits");
    }
    SetIv(iv);
  }

  void SetIv(const uint8_t iv[16]) override {
    std::memcpy(counter_, iv, 16);
    pending_used_ = 0;
  }

  void Encrypt(uint8_t *out, const uint8_t *in, size_t len) override {
    if (pending_used_ != 0) {  // finish the block the last call stopped inside
      alignas(16) uint8_t zeros[kBlock] = {}, keystream[kBlock];
      RunJob(keystream, zeros, kBlock, pending_counter_);
      while (pending_used_ < kBlock && len > 0) {
        *out++ = *in++ ^ keystream[pending_used_++];
        len--;
      }
      if (pending_used_ == kBlock) pending_used_ = 0;
      if (len == 0) return;
    }
    if (len % kBlock != 0) {  // the last block will be partly used: remember its counter
      std::memcpy(pending_counter_, counter_, 16);
      AddToCounter(pending_counter_, len / kBlock);
      pending_used_ = len % kBlock;
    }
    while (len > 0) {
      // Blocks left before the low 32 bits wrap (1..2^32).
      const uint64_t to_wrap = (uint64_t{1} << 32) - LoadBe32(counter_ + 12);
      const uint64_t blocks = (len + kBlock - 1) / kBlock;
      const size_t chunk = blocks <= to_wrap ? len : static_cast<size_t>(to_wrap * kBlock);
      RunJob(out, in, chunk, counter_);
      AddToCounter(counter_, (chunk + kBlock - 1) / kBlock);
      out += chunk;
      in += chunk;
      len -= chunk;
    }
  }

 private:
  // One CNTR job, no wrap handling: ipsec-mb's own counter semantics.
  void RunJob(uint8_t *out, const uint8_t *in, size_t len, const uint8_t iv[16]) {
    IMB_MGR *m = mgr_.get();
    IMB_JOB *job = IMB_GET_NEXT_JOB(m);
    job->cipher_mode = IMB_CIPHER_CNTR;
    job->cipher_direction = IMB_DIR_ENCRYPT;
    job->chain_order = IMB_ORDER_CIPHER_HASH;
    job->hash_alg = IMB_AUTH_NULL;
    job->enc_keys = enc_keys_;
    job->dec_keys = dec_keys_;
    job->key_len_in_bytes = static_cast<uint64_t>(key_bits_) / 8;
    job->src = in;
    job->dst = out;
    job->cipher_start_src_offset_in_bytes = 0;
    job->msg_len_to_cipher_in_bytes = len;
    job->hash_start_src_offset_in_bytes = 0;
    job->msg_len_to_hash_in_bytes = 0;
    job->iv = iv;
    job->iv_len_in_bytes = 16;
    job->auth_tag_output = nullptr;
    job->auth_tag_output_len_in_bytes = 0;
    job = IMB_SUBMIT_JOB(m);
    // CTR jobs complete at once; with this the only job in flight, a flush returns it
    // should a manager ever queue it.
    if (job == nullptr && imb_get_errno(m) == 0) job = IMB_FLUSH_JOB(m);
    if (job == nullptr || job->status != IMB_STATUS_COMPLETED)
      Die(name_ + ": CNTR job failed: " + imb_get_strerror(imb_get_errno(m)));
  }

  std::string name_;
  MbManager mgr_;
  int key_bits_;
  alignas(64) uint8_t enc_keys_[16 * 15];
  alignas(64) uint8_t dec_keys_[16 * 15];
  alignas(16) uint8_t counter_[16] = {};          // counter of the next whole block
  alignas(16) uint8_t pending_counter_[16] = {};  // counter of a partly used block
  size_t pending_used_ = 0;                       // its bytes already used (0 = none)
};

// ---------------------------------------------------------------------------
// Which implementations this CPU runs

struct ImplFactory {
  std::string name;
  std::vector<int> key_bits;
  std::function<std::unique_ptr<Impl>(int key_bits)> make;
};

void AddAesgenFactories(std::vector<ImplFactory> &factories) {
  const uint64_t have = aesgen_cpu_features();
  for (size_t i = 0; i < aesgen_kernel_count; i++) {
    const aesgen_kernel &k = aesgen_kernels[i];
    if (const uint64_t missing = k.features & ~have) {
      std::fprintf(stderr, "skip %s: needs%s\n", k.name, AesgenFeatureNames(missing).c_str());
      continue;
    }
    factories.push_back({k.name, AesgenKeyBits(), [&k](int bits) -> std::unique_ptr<Impl> {
                           return std::make_unique<AesgenImpl>(k, bits);
                         }});
  }
}

void AddIpsecMbFactories(std::vector<ImplFactory> &factories) {
  for (const MbFlavour &f : MbFlavours()) {
    MbManager mgr = MakeMbManager(f, f.name);
    if (!mgr) continue;
    std::string name = f.name;
    factories.push_back({name, kAllKeyBits, [name, mgr](int bits) -> std::unique_ptr<Impl> {
                           return std::make_unique<IpsecMbImpl>(name, mgr, bits);
                         }});
  }
}

// With OPENSSL_ia32cap set, make sure it really hides AES-NI from OpenSSL.
void CheckOpensslAesniMasked() {
  uint64_t word0 = 0;
  if (!OpensslIa32capWord0(&word0))
    Die("OPENSSL_ia32cap is set but OpenSSL does not report its capability vector");
  if (word0 & (uint64_t{1} << kIa32capAesniBit))
    Die(std::string("OPENSSL_ia32cap=") + std::getenv("OPENSSL_ia32cap") +
        " does not mask AES-NI (bit 57 of the first word is still set: " +
        OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS) + "); use e.g. OPENSSL_ia32cap=~0x200000200000000");
}

std::string OpensslImplName() { return NoAesniMode() ? "openssl-noaesni" : "openssl"; }

void AddOpensslFactory(std::vector<ImplFactory> &factories) {
  factories.push_back({OpensslImplName(), kAllKeyBits, [](int bits) -> std::unique_ptr<Impl> {
                         return std::make_unique<OpensslImpl>(bits);
                       }});
}

std::vector<ImplFactory> AvailableImpls() {
  std::vector<ImplFactory> factories;
  if (NoAesniMode()) {
    CheckOpensslAesniMasked();
    AddOpensslFactory(factories);
    return factories;
  }
  AddAesgenFactories(factories);
  AddOpensslFactory(factories);
  AddIpsecMbFactories(factories);
  return factories;
}

// ---------------------------------------------------------------------------
// Correctness check before timing

// AES-CTR of one message by a fresh OpenSSL context: the reference.
std::vector<uint8_t> OpensslReference(int key_bits, const uint8_t *key, const uint8_t iv[16],
                                      const uint8_t *in, size_t len) {
  std::vector<uint8_t> out(len);
  OpensslImpl ref(key_bits);
  ref.Init(key, iv);
  ref.Encrypt(out.data(), in, len);
  return out;
}

// The reference itself, against NIST SP 800-38A F.5.1, F.5.3 and F.5.5 (four blocks
// each; the counter carries out of byte 15 on the way).
void CheckReferenceAgainstSp800_38a() {
  static const struct {
    int bits;
    const char *key, *ciphertext;
  } kVectors[] = {
      {128, "2b7e151628aed2a6abf7158809cf4f3c",
       "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
       "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee"},
      {192, "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
       "1abc932417521ca24f2b0459fe7e6e0b090339ec0aa6faefd5ccc2c6f4ce8e94"
       "1e36b26bd1ebc670d1bd1d665620abf74f78a7f6d29809585a97daec58c6b050"},
      {256, "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
       "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
       "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6"},
  };
  const std::vector<uint8_t> iv = FromHex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  const std::vector<uint8_t> plaintext = FromHex(
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
      "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
  for (const auto &v : kVectors) {
    const std::vector<uint8_t> key = FromHex(v.key);
    if (OpensslReference(v.bits, key.data(), iv.data(), plaintext.data(), plaintext.size()) !=
        FromHex(v.ciphertext))
      Die("OpenSSL AES-" + std::to_string(v.bits) +
          "-CTR does not match SP 800-38A: no reference to check against");
  }
}

// Runs one message through impl and compares it with the reference; `split` bytes
// go in a first call and the rest in a second (0 = one call).
void CheckMessage(const std::string &what, Impl &impl, int key_bits, const uint8_t *key,
                  const uint8_t iv[16], size_t split) {
  const uint8_t *in = SharedBuffers().in;
  std::vector<uint8_t> out(kVerifyLen, 0);
  impl.Encrypt(out.data(), in, split);
  impl.Encrypt(out.data() + split, in + split, kVerifyLen - split);
  if (out != OpensslReference(key_bits, key, iv, in, kVerifyLen)) {
    size_t first_bad = 0;
    const std::vector<uint8_t> ref = OpensslReference(key_bits, key, iv, in, kVerifyLen);
    while (first_bad < kVerifyLen && out[first_bad] == ref[first_bad]) first_bad++;
    Die(what + ": output of a " + std::to_string(kVerifyLen) +
        "-byte message differs from OpenSSL's from byte " + std::to_string(first_bad) +
        "; refusing to benchmark it");
  }
}

// Checks one IMPL/KEYBITS before it is timed: a 4096+7-byte message after init;
// another after set_iv keeping bytes 0, 5, 10 (FACE tables reused), in 4096 + 7
// bytes; one whose counter carries out of the low 32 bits, in 7 + 4096 bytes; and
// one that wraps the whole 128-bit counter.
void VerifyImpl(const std::string &label, Impl &impl, int key_bits) {
  const Key key = BaseKey();
  Iv iv = BaseIv();
  impl.Init(key.bytes, iv.bytes);
  CheckMessage(label + " (after init)", impl, key_bits, key.bytes, iv.bytes, 0);

  iv.bytes[3] ^= 0x5a;
  iv.bytes[15] = 0x37;
  impl.SetIv(iv.bytes);
  CheckMessage(label + " (after set_iv, FACE tables kept)", impl, key_bits, key.bytes, iv.bytes,
               4096);

  StoreBe32(iv.bytes + 12, 0xfffffff9u);
  impl.SetIv(iv.bytes);
  CheckMessage(label + " (counter carrying out of its low 32 bits)", impl, key_bits, key.bytes,
               iv.bytes, 7);

  std::memset(iv.bytes, 0xff, 16);
  iv.bytes[15] = 0xf0;
  impl.SetIv(iv.bytes);
  CheckMessage(label + " (counter wrapping at 2^128)", impl, key_bits, key.bytes, iv.bytes, 0);
}

// ---------------------------------------------------------------------------
// The timed modes

void ReportPerMessage(benchmark::State &state, uint64_t ticks) {
  state.counters["ticks"] = benchmark::Counter(
      state.iterations() > 0 ? static_cast<double>(ticks) / static_cast<double>(state.iterations())
                             : 0.0);
}

// One key and IV; each iteration encrypts the next `size` bytes of the stream.
void BenchStream(benchmark::State &state, Impl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  const Iv iv = BaseIv();
  impl.Init(key.bytes, iv.bytes);
  impl.Encrypt(buf.out, buf.in, kWarmUpLen);
  const uint64_t t0 = Ticks();
  for (auto _ : state) impl.Encrypt(buf.out, buf.in, size);
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
}

// Each iteration: a new IV under the same key, then `size` bytes.  `fresh` changes
// IV bytes 0, 5 and 10 too, so FACE tables must be rebuilt for every message.
void BenchMessages(benchmark::State &state, Impl &impl, size_t size, bool fresh) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  const Iv iv = BaseIv();
  IvSequence ivs(fresh);
  impl.Init(key.bytes, iv.bytes);
  impl.Encrypt(buf.out, buf.in, kWarmUpLen);
  const uint64_t t0 = Ticks();
  for (auto _ : state) {
    impl.SetIv(ivs.Next());
    impl.Encrypt(buf.out, buf.in, size);
  }
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
}

// Key set-up alone (with the IV, as init takes both).
void BenchSetup(benchmark::State &state, Impl &impl) {
  const Key key = BaseKey();
  const Iv iv = BaseIv();
  const uint64_t t0 = Ticks();
  for (auto _ : state) impl.Init(key.bytes, iv.bytes);
  const uint64_t ticks = Ticks() - t0;
  ReportPerMessage(state, ticks);  // no bytes: bytes_per_second would only say 0/s
}

// Each iteration: init with a new key and an IV whose byte 0 differs from the last
// one (FACE tables start empty), then `size` bytes.
void BenchFirst(benchmark::State &state, Impl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  Key key = BaseKey();
  IvSequence ivs(/*fresh=*/true);
  uint8_t n = 0;
  const uint64_t t0 = Ticks();
  for (auto _ : state) {
    key.bytes[0] = ++n;
    impl.Init(key.bytes, ivs.Next());
    impl.Encrypt(buf.out, buf.in, size);
  }
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
  ReportPerMessage(state, ticks);
}

// ---------------------------------------------------------------------------
// Command line and registration

struct Options {
  std::set<size_t> sizes;  // empty = all
  std::set<size_t> first_sizes;  // empty = as `sizes` selects
  std::set<int> key_bits;  // empty = all
  std::vector<size_t> aead_sizes;  // empty = each AEAD table's defaults
  bool ctr = true, gcm = true, gcm_siv = true, otr = true, ghash = false;  // --aesgen_what
  bool gcm_fresh = false;
  bool list = false;
};

[[noreturn]] void UsageError(const std::string &message) {
  std::fprintf(stderr, "aesgen_bench: error: %s\n", message.c_str());
  std::exit(2);
}

std::vector<unsigned long> ParseNumberList(const std::string &flag, const std::string &text) {
  std::vector<unsigned long> numbers;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char *end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') UsageError(flag + ": '" + item + "' is not a number");
    numbers.push_back(v);
  }
  if (numbers.empty()) UsageError(flag + ": empty list");
  return numbers;
}

bool Contains(const std::vector<size_t> &v, size_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void PrintOwnFlags() {
  std::printf(
      "aesgen_bench flags (besides Google Benchmark's, listed below):\n"
      "  --aesgen_sizes=16,4096   register only these sizes (stream/msg_iv/fresh_iv:\n"
      "                           16 1024 4096 20480 40960; first: 256 ... 65536);\n"
      "                           setup (size 0) is always registered\n"
      "  --aesgen_first_sizes=256,4096  sizes of the `first` benchmarks (default: as\n"
      "                           --aesgen_sizes selects them)\n"
      "  --aesgen_keys=128,256    register only these key sizes\n"
      "  --aesgen_what=ctr,gcm    any of: the CTR benchmarks (ctr), gcm_seal (gcm),\n"
      "                           the set's GCM kernels under fresh random nonces\n"
      "                           gcm_seal_fresh (gcm-fresh),\n"
      "                           AES-GCM-SIV gcm_siv_seal and gcm_siv_open (gcm-siv),\n"
      "                           AES-OTR otr_seal and otr_open beside AES-OCB, and the\n"
      "                           otr_ref comparison (otr), GHASH alone (ghash); default\n"
      "                           ctr,gcm,gcm-siv,otr\n"
      "  --aesgen_aead_sizes=64,1420  gcm_seal(_fresh), gcm-siv, otr and ghash sizes, 1..65520\n"
      "                           (default gcm_seal and ghash 64,256,1420,4096,16384;\n"
      "                           gcm-siv and otr 16,64,256,1420,4096,16384)\n"
      "  --aesgen_list            print the benchmark names and exit\n"
      "  env OPENSSL_ia32cap=~0x200000200000000  benchmark only OpenSSL, without AES-NI\n"
      "                           and PCLMULQDQ (ghash refuses a mask that keeps PCLMULQDQ)\n\n");
}

// Takes our flags out of argv (in place) and returns them.
Options ParseOwnFlags(int *argc, char **argv) {
  Options opt;
  int kept = 1;
  for (int i = 1; i < *argc; i++) {
    const std::string arg = argv[i];
    auto value_of = [&arg](const char *flag) -> const char * {
      const size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '='
                 ? arg.c_str() + n + 1
                 : nullptr;
    };
    if (const char *v = value_of("--aesgen_sizes")) {
      for (unsigned long s : ParseNumberList("--aesgen_sizes", v)) {
        if (!Contains(kMessageSizes, s) && !Contains(kFirstSizes, s))
          UsageError("--aesgen_sizes: " + std::to_string(s) +
                     " is not a benchmark size (see --help)");
        opt.sizes.insert(s);
      }
    } else if (const char *v = value_of("--aesgen_first_sizes")) {
      for (unsigned long s : ParseNumberList("--aesgen_first_sizes", v)) {
        if (!Contains(kFirstSizes, s))
          UsageError("--aesgen_first_sizes: " + std::to_string(s) +
                     " is not a `first` benchmark size (see --help)");
        opt.first_sizes.insert(s);
      }
    } else if (const char *v = value_of("--aesgen_keys")) {
      for (unsigned long k : ParseNumberList("--aesgen_keys", v)) {
        if (k != 128 && k != 192 && k != 256)
          UsageError("--aesgen_keys: " + std::to_string(k) + " is not 128, 192 or 256");
        opt.key_bits.insert(static_cast<int>(k));
      }
    } else if (const char *v = value_of("--aesgen_aead_sizes")) {
      std::set<size_t> sizes;
      for (unsigned long s : ParseNumberList("--aesgen_aead_sizes", v)) {
        if (s < 1 || s > kGcmMaxSize)
          UsageError("--aesgen_aead_sizes: " + std::to_string(s) + " is not in 1.." +
                     std::to_string(kGcmMaxSize));
        sizes.insert(s);
      }
      opt.aead_sizes.assign(sizes.begin(), sizes.end());
    } else if (const char *v = value_of("--aesgen_what")) {
      opt.ctr = opt.gcm = opt.gcm_siv = opt.otr = opt.ghash = opt.gcm_fresh = false;
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (item == "ctr")
          opt.ctr = true;
        else if (item == "gcm")
          opt.gcm = true;
        else if (item == "gcm-fresh")
          opt.gcm_fresh = true;
        else if (item == "gcm-siv")
          opt.gcm_siv = true;
        else if (item == "otr")
          opt.otr = true;
        else if (item == "ghash")
          opt.ghash = true;
        else
          UsageError("--aesgen_what: '" + item +
                     "' is not ctr, gcm, gcm-fresh, gcm-siv, otr or ghash");
      }
      if (!opt.ctr && !opt.gcm && !opt.gcm_fresh && !opt.gcm_siv && !opt.otr && !opt.ghash)
        UsageError("--aesgen_what: empty list");
    } else if (arg == "--aesgen_list") {
      opt.list = true;
    } else if (arg.compare(0, 9, "--aesgen_") == 0) {
      UsageError("unknown flag " + arg);
    } else {
      if (arg == "--help" || arg == "-h") PrintOwnFlags();
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return opt;
}

std::vector<size_t> SelectSizes(const std::vector<size_t> &all, const Options &opt) {
  std::vector<size_t> sizes;
  for (size_t s : all)
    if (opt.sizes.empty() || opt.sizes.count(s)) sizes.push_back(s);
  return sizes;
}

// One IMPL at one key size, ready to be verified and timed.
struct Target {
  std::string name;  // "IMPL/KEYBITS", for messages
  int key_bits;
  std::shared_ptr<Impl> impl;
};

std::string BenchName(const std::string &impl, const char *mode, int bits, size_t size) {
  return impl + "/" + mode + "/" + std::to_string(bits) + "/" + std::to_string(size);
}

// Registers every benchmark of every available IMPL and key size; returns the
// targets (for the check) and appends the benchmark names to `names`.
std::vector<Target> RegisterAll(const Options &opt, std::vector<std::string> &names) {
  const std::vector<size_t> message_sizes = SelectSizes(kMessageSizes, opt);
  Options first_opt = opt;
  if (!opt.first_sizes.empty()) first_opt.sizes = opt.first_sizes;
  const std::vector<size_t> first_sizes = SelectSizes(kFirstSizes, first_opt);
  std::vector<Target> targets;
  if (!opt.ctr) return targets;
  for (const ImplFactory &factory : AvailableImpls()) {
    for (int bits : factory.key_bits) {
      if (!opt.key_bits.empty() && !opt.key_bits.count(bits)) continue;
      std::shared_ptr<Impl> impl = factory.make(bits);
      targets.push_back({factory.name + "/" + std::to_string(bits), bits, impl});
      auto add = [&names](const std::string &name, std::function<void(benchmark::State &)> fn) {
        benchmark::RegisterBenchmark(name.c_str(), std::move(fn));
        names.push_back(name);
      };
      for (size_t size : message_sizes) {
        add(BenchName(factory.name, "stream", bits, size),
            [impl, size](benchmark::State &st) { BenchStream(st, *impl, size); });
        add(BenchName(factory.name, "msg_iv", bits, size),
            [impl, size](benchmark::State &st) { BenchMessages(st, *impl, size, false); });
        add(BenchName(factory.name, "fresh_iv", bits, size),
            [impl, size](benchmark::State &st) { BenchMessages(st, *impl, size, true); });
      }
      add(BenchName(factory.name, "setup", bits, 0),
          [impl](benchmark::State &st) { BenchSetup(st, *impl); });
      for (size_t size : first_sizes)
        add(BenchName(factory.name, "first", bits, size),
            [impl, size](benchmark::State &st) { BenchFirst(st, *impl, size); });
    }
  }
  return targets;
}

// ---------------------------------------------------------------------------
// Context for the report

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.compare(0, 10, "model name") != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown";
}

void AddContext() {
  benchmark::AddCustomContext("cpu_model", CpuModelName());
  benchmark::AddCustomContext("tsc_note", kTscNote);
  benchmark::AddCustomContext("aesgen_preset", AESGEN_BENCH_PRESET);
  benchmark::AddCustomContext("aesgen_cpu_features", AesgenFeatureNames(aesgen_cpu_features()));
  benchmark::AddCustomContext("openssl_version", OpenSSL_version(OPENSSL_VERSION));
  benchmark::AddCustomContext("openssl_cpu_settings", OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS));
  benchmark::AddCustomContext("ipsec_mb_version", imb_get_version_str());
}

}  // namespace

int main(int argc, char **argv) {
  const Options opt = ParseOwnFlags(&argc, argv);
  std::vector<std::string> names;
  const std::vector<Target> targets = RegisterAll(opt, names);
  // --aesgen_aead_sizes, or each table's own sizes
  const std::vector<size_t> &gcm_sizes = opt.aead_sizes.empty() ? kGcmSizes : opt.aead_sizes;
  const std::vector<size_t> &siv_sizes = opt.aead_sizes.empty() ? kGcmSivSizes : opt.aead_sizes;
  const std::vector<size_t> &otr_sizes = opt.aead_sizes.empty() ? kOtrSizes : opt.aead_sizes;
  // beside OpenSSL with AES-NI and PCLMULQDQ masked, only its own GCM (gcm_bench.cc) and
  // GHASH (ghash_bench.cc)
  const std::vector<GcmTarget> gcm_targets =
      opt.gcm || opt.gcm_fresh ? RegisterGcm(gcm_sizes, opt.key_bits, names, opt.gcm,
                                             opt.gcm_fresh)
                               : std::vector<GcmTarget>{};
  const std::vector<GcmSivTarget> siv_targets =
      opt.gcm_siv ? RegisterGcmSiv(siv_sizes, opt.key_bits, names)
                  : std::vector<GcmSivTarget>{};
  const std::vector<OtrTarget> otr_targets =
      opt.otr ? RegisterOtr(otr_sizes, opt.key_bits, names) : std::vector<OtrTarget>{};
  const std::vector<GhashTarget> ghash_targets =
      opt.ghash ? RegisterGhash(gcm_sizes, opt.key_bits, names) : std::vector<GhashTarget>{};
  if (opt.list) {
    for (const std::string &name : names) std::printf("%s\n", name.c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  CheckReferenceAgainstSp800_38a();
  for (const Target &t : targets) VerifyImpl(t.name, *t.impl, t.key_bits);
  VerifyGcm(gcm_targets, gcm_sizes);
  VerifyGcmSiv(siv_targets, siv_sizes);
  VerifyOtr(otr_targets, otr_sizes);
  VerifyGhash(ghash_targets, gcm_sizes);

  AddContext();
  if (!gcm_targets.empty() || !siv_targets.empty() || !otr_targets.empty()) AddAeadPeerContext();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
