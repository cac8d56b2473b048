// gcm_bench.cc: AES-GCM seal benchmarks (IMPL/gcm_seal/KEYBITS/SIZE) of aesgen_bench, the
// set's GCM kernels beside OpenSSL, ipsec-mb, libgcrypt and BoringSSL.  See gcm_bench.h.
//
// How each IMPL seals one record (key set-up is done before the timed loop):
//   aesgen kernel        aesgen_aead.seal(ctx, nonce, 12, aad, 13, in, len, out, tag, 16)
//                        after aesgen_aead.init(ctx, key, key_len)
//   openssl-gcm          one EVP_CIPHER_CTX keyed once (EVP_aes_{128,256}_gcm); per record
//                        EVP_EncryptInit_ex with the nonce only, EVP_EncryptUpdate of the
//                        AAD and of the data, EVP_EncryptFinal_ex, EVP_CTRL_AEAD_GET_TAG
//   openssl-noaesni-gcm  the same, alone, in the child run with OPENSSL_ia32cap masking
//                        AES-NI and PCLMULQDQ (OpenSSL's vpaes/bsaes and 4-bit-table GHASH)
//   ipsec-mb-*-gcm       the manager's direct GCM functions: IMB_AES{128,256}_GCM_PRE once,
//                        then IMB_AES{128,256}_GCM_ENC per record (SSE, AVX2, AVX-512
//                        managers, each only where the CPU runs it)
//   libgcrypt-gcm        gcry_cipher_open(GCRY_CIPHER_AES{128,256}, GCRY_CIPHER_MODE_GCM)
//                        and gcry_cipher_setkey once; per record gcry_cipher_setiv,
//                        gcry_cipher_authenticate, gcry_cipher_encrypt, gcry_cipher_gettag
//   boringssl-gcm        Debian's android-libboringssl, dlopen()ed (aead_common.h):
//                        EVP_AEAD_CTX_new once (EVP_aead_aes_{128,256}_gcm, 16-byte tag),
//                        then EVP_AEAD_CTX_seal per record (ciphertext and tag in one
//                        buffer, as TLS sends them)
//
// The record (nonces, AAD), the BoringSSL loader and libgcrypt's initialisation are shared
// with gcm_siv_bench.cc through aead_common.h.

#include "gcm_bench.h"

#include <gcrypt.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aead_common.h"
#include "aesgen.h"
#include "bench_common.h"

namespace aesgen_bench {
namespace {

constexpr size_t kVerifyOddLen = 4096 + 7;  // not a multiple of 16

std::string Bits(int key_bits) { return std::to_string(key_bits); }

}  // namespace

// ---------------------------------------------------------------------------
// The implementations, behind one interface
//
// A GcmImpl is one AES-GCM implementation at one key size.  SetKey keys it; Seal
// encrypts one record under the current key: `len` bytes from `in` to `out`, then the
// 16-byte tag at out + len (out has room for len + 16 bytes; in != out).

class GcmImpl {
 public:
  virtual ~GcmImpl() = default;
  virtual void SetKey(const uint8_t *key) = 0;
  virtual void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
                    const uint8_t *in, size_t len, uint8_t *out) = 0;
};

namespace {

#ifdef AESGEN_HAVE_AEAD
// A GCM entry of the generated set's aesgen_aeads[].
class AesgenGcm final : public GcmImpl {
 public:
  AesgenGcm(const aesgen_aead &aead, int key_bits)
      : aead_(aead), key_len_(static_cast<size_t>(key_bits) / 8),
        ctx_(AlignedBuffer(aead.ctx_size)) {}
  ~AesgenGcm() override {
    aead_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t *key) override {
    if (aead_.init(ctx_, key, key_len_) != 0)
      Die(std::string(aead_.name) + ": init refused a " + std::to_string(key_len_ * 8) +
          "-bit key");
  }
  void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
            const uint8_t *in, size_t len, uint8_t *out) override {
    if (aead_.seal(ctx_, nonce, nonce_len, aad, aad_len, in, len, out, out + len, kTagLen) != 0)
      Die(std::string(aead_.name) + ": seal returned -1");
  }

 private:
  const aesgen_aead &aead_;
  size_t key_len_;
  uint8_t *ctx_;
};
#endif  // AESGEN_HAVE_AEAD

const EVP_CIPHER *OpensslGcmCipher(int key_bits) {
  switch (key_bits) {
    case 128: return EVP_aes_128_gcm();
    case 192: return EVP_aes_192_gcm();
    case 256: return EVP_aes_256_gcm();
  }
  Die("no OpenSSL GCM cipher for " + Bits(key_bits) + "-bit keys");
}

// OpenSSL EVP: the cipher chosen once, the key set once; each record passes only the
// nonce to EVP_EncryptInit_ex, so the key schedule and GHASH key are kept.
class OpensslGcm final : public GcmImpl {
 public:
  explicit OpensslGcm(int key_bits) : ctx_(EVP_CIPHER_CTX_new()) {
    if (ctx_ == nullptr ||
        EVP_EncryptInit_ex(ctx_, OpensslGcmCipher(key_bits), nullptr, nullptr, nullptr) != 1)
      Die("openssl-gcm: EVP_EncryptInit_ex failed to set up AES-" + Bits(key_bits) + "-GCM");
  }
  ~OpensslGcm() override { EVP_CIPHER_CTX_free(ctx_); }

  void SetKey(const uint8_t *key) override {
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, key, nullptr) != 1)
      Die("openssl-gcm: EVP_EncryptInit_ex (key) failed");
  }
  void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
            const uint8_t *in, size_t len, uint8_t *out) override {
    int n = 0;
    if (nonce_len != iv_len_) {  // not on the timed path: records use 12 bytes
      if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_IVLEN, static_cast<int>(nonce_len),
                              nullptr) != 1)
        Die("openssl-gcm: EVP_CTRL_AEAD_SET_IVLEN failed");
      iv_len_ = nonce_len;
    }
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_EncryptUpdate(ctx_, nullptr, &n, aad, static_cast<int>(aad_len)) != 1 ||
        EVP_EncryptUpdate(ctx_, out, &n, in, static_cast<int>(len)) != 1 ||
        static_cast<size_t>(n) != len || EVP_EncryptFinal_ex(ctx_, out + len, &n) != 1 ||
        n != 0 ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, kTagLen, out + len) != 1)
      Die("openssl-gcm: sealing a " + std::to_string(len) + "-byte record failed");
  }

 private:
  EVP_CIPHER_CTX *ctx_;
  size_t iv_len_ = kNonceLen;
};

// ipsec-mb's direct GCM API on one manager (shared by the key sizes of one IMPL); its
// ENC functions take 12-byte IVs.
class IpsecMbGcm final : public GcmImpl {
 public:
  IpsecMbGcm(std::string name, MbManager mgr, int key_bits)
      : name_(std::move(name)), mgr_(std::move(mgr)), key_bits_(key_bits),
        key_(reinterpret_cast<gcm_key_data *>(AlignedBuffer(sizeof(gcm_key_data)))),
        ctx_(reinterpret_cast<gcm_context_data *>(AlignedBuffer(sizeof(gcm_context_data)))) {
    if (key_bits != 128 && key_bits != 256) Die(name_ + ": no " + Bits(key_bits) + "-bit GCM");
  }
  ~IpsecMbGcm() override {
    std::memset(key_, 0, sizeof(gcm_key_data));
    std::free(key_);
    std::free(ctx_);
  }

  void SetKey(const uint8_t *key) override {
    IMB_MGR *m = mgr_.get();
    if (key_bits_ == 128)
      IMB_AES128_GCM_PRE(m, key, key_);
    else
      IMB_AES256_GCM_PRE(m, key, key_);
    if (const int err = imb_get_errno(m)) Die(name_ + ": GCM_PRE failed: " + imb_get_strerror(err));
  }

  void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
            const uint8_t *in, size_t len, uint8_t *out) override {
    IMB_MGR *m = mgr_.get();
    if (nonce_len != kNonceLen) Die(name_ + ": GCM_ENC takes 12-byte nonces only");
    if (key_bits_ == 128)
      IMB_AES128_GCM_ENC(m, key_, ctx_, out, in, len, nonce, aad, aad_len, out + len, kTagLen);
    else
      IMB_AES256_GCM_ENC(m, key_, ctx_, out, in, len, nonce, aad, aad_len, out + len, kTagLen);
  }

  // After the checks: did the library flag an error (bad argument)?
  std::string Error() const {
    const int err = imb_get_errno(mgr_.get());
    return err ? imb_get_strerror(err) : "";
  }

 private:
  std::string name_;
  MbManager mgr_;
  int key_bits_;
  gcm_key_data *key_;
  gcm_context_data *ctx_;
};

// libgcrypt: one handle per key size, keyed once; gcry_cipher_setiv starts a new record.
class LibgcryptGcm final : public GcmImpl {
 public:
  explicit LibgcryptGcm(int key_bits) {
    const int algo = key_bits == 128 ? GCRY_CIPHER_AES128
                     : key_bits == 192 ? GCRY_CIPHER_AES192
                                       : GCRY_CIPHER_AES256;
    Check(gcry_cipher_open(&h_, algo, GCRY_CIPHER_MODE_GCM, 0), "gcry_cipher_open");
    key_len_ = static_cast<size_t>(key_bits) / 8;
  }
  ~LibgcryptGcm() override { gcry_cipher_close(h_); }

  void SetKey(const uint8_t *key) override {
    Check(gcry_cipher_setkey(h_, key, key_len_), "gcry_cipher_setkey");
  }
  void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
            const uint8_t *in, size_t len, uint8_t *out) override {
    gcry_error_t e = gcry_cipher_setiv(h_, nonce, nonce_len);
    if (!e) e = gcry_cipher_authenticate(h_, aad, aad_len);
    if (!e) e = gcry_cipher_encrypt(h_, out, len, in, len);
    if (!e) e = gcry_cipher_gettag(h_, out + len, kTagLen);
    Check(e, "sealing a record");
  }

 private:
  static void Check(gcry_error_t e, const char *what) {
    if (e) Die(std::string("libgcrypt-gcm: ") + what + ": " + gcry_strerror(e));
  }
  gcry_cipher_hd_t h_ = nullptr;
  size_t key_len_ = 0;
};

class BoringSslGcm final : public GcmImpl {
 public:
  BoringSslGcm(const BoringSsl &lib, int key_bits)
      : lib_(lib),
        aead_(key_bits == 128 ? lib.aes_128_gcm() : key_bits == 256 ? lib.aes_256_gcm() : nullptr),
        key_len_(static_cast<size_t>(key_bits) / 8) {
    if (aead_ == nullptr) Die("boringssl-gcm: no AEAD for " + Bits(key_bits) + "-bit keys");
  }
  ~BoringSslGcm() override {
    if (ctx_ != nullptr) lib_.ctx_free(ctx_);
  }

  void SetKey(const uint8_t *key) override {
    if (ctx_ != nullptr) lib_.ctx_free(ctx_);
    ctx_ = lib_.ctx_new(aead_, key, key_len_, kTagLen);
    if (ctx_ == nullptr) Die("boringssl-gcm: EVP_AEAD_CTX_new failed");
  }
  void Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
            const uint8_t *in, size_t len, uint8_t *out) override {
    size_t out_len = 0;
    if (lib_.seal(ctx_, out, &out_len, len + kTagLen, nonce, nonce_len, in, len, aad,
                  aad_len) != 1 ||
        out_len != len + kTagLen)
      Die("boringssl-gcm: EVP_AEAD_CTX_seal of a " + std::to_string(len) +
          "-byte record failed");
  }

 private:
  const BoringSsl &lib_;
  const void *aead_;
  size_t key_len_;
  void *ctx_ = nullptr;
};

// ---------------------------------------------------------------------------
// Which implementations this process runs

struct GcmFactory {
  std::string name;
  std::vector<int> key_bits;
  std::function<std::shared_ptr<GcmImpl>(int key_bits)> make;
  bool aesgen = false;  // a kernel of the set (the fresh-nonce table has these alone)
};

const std::vector<int> kPeerKeyBits(std::begin(kGcmKeyBits), std::end(kGcmKeyBits));

void AddAesgenGcm(std::vector<GcmFactory> &factories) {
#ifdef AESGEN_HAVE_AEAD
  std::vector<int> bits;
  for (int b : AesgenKeyBits())
    if (std::find(kPeerKeyBits.begin(), kPeerKeyBits.end(), b) != kPeerKeyBits.end())
      bits.push_back(b);
  for (size_t i : RunnableGcmAeads()) {
    const aesgen_aead &a = aesgen_aeads[i];
    factories.push_back({a.name, bits,
                         [&a](int b) -> std::shared_ptr<GcmImpl> {
                           return std::make_shared<AesgenGcm>(a, b);
                         },
                         true});
  }
#else
  (void)factories;  // this set's aesgen.h declares no AEAD kernels
#endif
}

void AddIpsecMbGcm(std::vector<GcmFactory> &factories) {
  for (const MbFlavour &f : MbFlavours()) {
    const std::string name = std::string(f.name) + "-gcm";
    MbManager mgr = MakeMbManager(f, name);
    if (!mgr) continue;
    factories.push_back({name, kPeerKeyBits, [name, mgr](int b) -> std::shared_ptr<GcmImpl> {
                           return std::make_shared<IpsecMbGcm>(name, mgr, b);
                         }});
  }
}

void AddLibgcryptGcm(std::vector<GcmFactory> &factories) {
  if (const std::string &why = LibgcryptError(); !why.empty()) {
    Skip("libgcrypt-gcm", why);
    return;
  }
  factories.push_back({"libgcrypt-gcm", kPeerKeyBits, [](int b) -> std::shared_ptr<GcmImpl> {
                         return std::make_shared<LibgcryptGcm>(b);
                       }});
}

void AddBoringSslGcm(std::vector<GcmFactory> &factories) {
  const BoringSsl &lib = LoadBoringSsl();
  if (!lib.error.empty()) {
    Skip("boringssl-gcm", lib.error);
    return;
  }
  factories.push_back({"boringssl-gcm", kPeerKeyBits, [&lib](int b) -> std::shared_ptr<GcmImpl> {
                         return std::make_shared<BoringSslGcm>(lib, b);
                       }});
}

std::vector<GcmFactory> AvailableGcm() {
  std::vector<GcmFactory> factories;
  if (NoAesniMode()) {  // the child run: OpenSSL's own GCM without AES-NI and PCLMULQDQ
    factories.push_back({"openssl-noaesni-gcm", kPeerKeyBits,
                         [](int b) -> std::shared_ptr<GcmImpl> {
                           return std::make_shared<OpensslGcm>(b);
                         }});
    return factories;
  }
  AddAesgenGcm(factories);
  factories.push_back({"openssl-gcm", kPeerKeyBits, [](int b) -> std::shared_ptr<GcmImpl> {
                         return std::make_shared<OpensslGcm>(b);
                       }});
  AddIpsecMbGcm(factories);
  AddLibgcryptGcm(factories);
  AddBoringSslGcm(factories);
  return factories;
}

// ---------------------------------------------------------------------------
// The timed loop

template <class Nonces>
void BenchGcmSeal(benchmark::State &state, GcmImpl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  Nonces nonces;
  impl.Seal(nonces.Next(), kNonceLen, RecordAad(), kAadLen, buf.in, size, buf.out);  // warm-up
  const uint64_t t0 = Ticks();
  for (auto _ : state)
    impl.Seal(nonces.Next(), kNonceLen, RecordAad(), kAadLen, buf.in, size, buf.out);
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
}

// ---------------------------------------------------------------------------
// Correctness check before timing

// Ciphertext and tag of one record by a fresh OpenSSL context: the reference.
std::vector<uint8_t> OpensslSeal(int key_bits, const uint8_t *key, const uint8_t *nonce,
                                 size_t nonce_len, const uint8_t *aad, size_t aad_len,
                                 const uint8_t *in, size_t len) {
  std::vector<uint8_t> out(len + kTagLen);
  OpensslGcm ref(key_bits);
  ref.SetKey(key);
  ref.Seal(nonce, nonce_len, aad, aad_len, in, len, out.data());
  return out;
}

// The reference itself, against the GCM specification's test cases 2, 4, 14 and 16
// (McGrew and Viega, "The Galois/Counter Mode of Operation", appendix B).
void CheckReferenceAgainstSpec() {
  static const struct {
    int bits;
    const char *key, *iv, *aad, *plaintext, *ciphertext, *tag;
  } kVectors[] = {
      {128, "00000000000000000000000000000000", "000000000000000000000000", "",
       "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78",
       "ab6e47d42cec13bdf53a67b21257bddf"},
      {128, "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
       "feedfacedeadbeeffeedfacedeadbeefabaddad2",
       "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
       "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
       "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
       "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
       "5bc94fbc3221a5db94fae95ae7121a47"},
      {256, "0000000000000000000000000000000000000000000000000000000000000000",
       "000000000000000000000000", "", "00000000000000000000000000000000",
       "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
      {256, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
       "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
       "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
       "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
       "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
       "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
       "76fc6ece0f4e1768cddf8853bb2d551b"},
  };
  for (const auto &v : kVectors) {
    const std::vector<uint8_t> key = FromHex(v.key), iv = FromHex(v.iv), aad = FromHex(v.aad),
                               pt = FromHex(v.plaintext);
    std::vector<uint8_t> want = FromHex(v.ciphertext);
    const std::vector<uint8_t> tag = FromHex(v.tag);
    want.insert(want.end(), tag.begin(), tag.end());
    if (OpensslSeal(v.bits, key.data(), iv.data(), iv.size(), aad.data(), aad.size(), pt.data(),
                    pt.size()) != want)
      Die("OpenSSL AES-" + Bits(v.bits) +
          "-GCM does not match the GCM specification's test vectors: no reference to check "
          "against");
  }
}

// Seals one record with `impl` and compares ciphertext and tag with the reference, and
// that nothing was written past the tag.
void CheckRecord(const std::string &what, GcmImpl &impl, int key_bits, const uint8_t *key,
                 const uint8_t *nonce, size_t len) {
  const uint8_t *in = SharedBuffers().in;
  std::vector<uint8_t> out(len + kTagLen + 16, 0xe5);
  impl.Seal(nonce, kNonceLen, RecordAad(), kAadLen, in, len, out.data());
  const std::vector<uint8_t> ref =
      OpensslSeal(key_bits, key, nonce, kNonceLen, RecordAad(), kAadLen, in, len);
  size_t bad = 0;
  while (bad < ref.size() && out[bad] == ref[bad]) bad++;
  const std::string record = what + ", " + std::to_string(len) + "-byte record";
  if (bad < len)
    Die(record + ": ciphertext differs from OpenSSL's from byte " + std::to_string(bad) +
        "; refusing to benchmark it");
  if (bad < ref.size())
    Die(record + ": ciphertext right but tag differs from OpenSSL's; refusing to benchmark it");
  for (size_t i = ref.size(); i < out.size(); i++)
    if (out[i] != 0xe5) Die(record + ": wrote past the tag; refusing to benchmark it");
}

void VerifyTarget(const GcmTarget &t, const std::vector<size_t> &sizes) {
  GcmImpl &impl = *t.impl;
  const Key key = BaseKey();
  Key other = key;
  for (uint8_t &b : other.bytes) b ^= 0x5c;
  // another key first: the base key below must replace it completely
  TlsNonces nonces(7);
  impl.SetKey(other.bytes);
  CheckRecord(t.name + " (other key)", impl, t.key_bits, other.bytes, nonces.Next(),
              kVerifyOddLen);
  impl.SetKey(key.bytes);
  // then a run of records under one key, as the benchmark seals them; the sequence
  // number starts just below a carry out of its low 32 bits
  std::vector<size_t> lengths = {1, 15, 16, kVerifyOddLen, 1420};
  lengths.insert(lengths.end(), sizes.begin(), sizes.end());
  TlsNonces run((uint64_t{1} << 32) - 3);
  for (size_t i = 0; i < lengths.size(); i++)
    CheckRecord(t.name + " (record " + std::to_string(i + 1) + " after set-up)", impl,
                t.key_bits, key.bytes, run.Next(), lengths[i]);
  if (auto *mb = dynamic_cast<IpsecMbGcm *>(&impl))
    if (const std::string err = mb->Error(); !err.empty())
      Die(t.name + ": ipsec-mb reported an error: " + err);
}

}  // namespace

// ---------------------------------------------------------------------------
// The interface (gcm_bench.h)

std::vector<GcmTarget> RegisterGcm(const std::vector<size_t> &sizes,
                                   const std::set<int> &key_bits,
                                   std::vector<std::string> &names, bool tls, bool fresh) {
  std::vector<GcmTarget> targets;
  for (const GcmFactory &factory : AvailableGcm()) {
    if (!tls && !factory.aesgen) continue;  // fresh nonces alone: the set's kernels
    for (int bits : factory.key_bits) {
      if (!key_bits.empty() && !key_bits.count(bits)) continue;
      std::shared_ptr<GcmImpl> impl = factory.make(bits);
      targets.push_back({factory.name + "/" + Bits(bits), bits, impl});
      for (size_t size : sizes) {
        const std::string tail = "/" + Bits(bits) + "/" + std::to_string(size);
        if (tls) {
          const std::string name = factory.name + "/gcm_seal" + tail;
          benchmark::RegisterBenchmark(name.c_str(), [impl, size](benchmark::State &st) {
            BenchGcmSeal<TlsNonces>(st, *impl, size);
          });
          names.push_back(name);
        }
        if (fresh && factory.aesgen) {
          const std::string name = factory.name + "/gcm_seal_fresh" + tail;
          benchmark::RegisterBenchmark(name.c_str(), [impl, size](benchmark::State &st) {
            BenchGcmSeal<FreshNonces>(st, *impl, size);
          });
          names.push_back(name);
        }
      }
    }
  }
  return targets;
}

void CheckGcmReference() { CheckReferenceAgainstSpec(); }

std::vector<size_t> RunnableGcmAeads() {
  std::vector<size_t> out;
#ifdef AESGEN_HAVE_AEAD
  const uint64_t have = aesgen_cpu_features();
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    const aesgen_aead &a = aesgen_aeads[i];
    if (std::strcmp(a.mode, "gcm") != 0) continue;  // GCM-SIV, OTR: not GCM
    if (const uint64_t missing = a.features & ~have) {
      Skip(a.name, "needs" + AesgenFeatureNames(missing));
      continue;
    }
    if (kNonceLen < a.nonce_min || kNonceLen > a.nonce_max || kTagLen < a.tag_min ||
        kTagLen > a.tag_max) {
      Skip(a.name, "does not take 12-byte nonces and 16-byte tags");
      continue;
    }
    out.push_back(i);
  }
#endif
  return out;
}

void VerifyGcm(const std::vector<GcmTarget> &targets, const std::vector<size_t> &sizes) {
  if (targets.empty()) return;
  CheckReferenceAgainstSpec();
  for (const GcmTarget &t : targets) VerifyTarget(t, sizes);
}

}  // namespace aesgen_bench
