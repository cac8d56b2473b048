// gcm_siv_bench.cc: AES-GCM-SIV (RFC 8452) seal and open benchmarks
// (IMPL/gcm_siv_seal/KEYBITS/SIZE, IMPL/gcm_siv_open/KEYBITS/SIZE) of aesgen_bench: the
// set's GCM-SIV kernels beside BoringSSL and libgcrypt.  See gcm_siv_bench.h.
//
// How each IMPL seals and opens one record (key set-up is done before the timed loop):
//   aesgen kernel       aesgen_aead.seal(ctx, nonce, 12, aad, 13, in, len, out, tag, 16) and
//                       aesgen_aead.open(ctx, nonce, 12, aad, 13, in, len, out, tag, 16)
//                       after aesgen_aead.init(ctx, key, key_len)
//   boringssl-gcm-siv   Debian's android-libboringssl, dlopen()ed (aead_common.h):
//                       EVP_AEAD_CTX_new once (EVP_aead_aes_{128,256}_gcm_siv, 16-byte tag),
//                       then EVP_AEAD_CTX_seal or EVP_AEAD_CTX_open per record (ciphertext
//                       and tag in one buffer).  This build's EVP_aead_aes_*_gcm_siv hand
//                       out its assembly AEAD where its own CPU capability vector has AES-NI
//                       and AVX (the test is in their code), its C one otherwise
//   libgcrypt-gcm-siv   gcry_cipher_open(GCRY_CIPHER_AES{128,256}, GCRY_CIPHER_MODE_GCM_SIV)
//                       and gcry_cipher_setkey once; per record gcry_cipher_reset, then
//                       gcry_cipher_setiv, gcry_cipher_authenticate of the AAD, and to seal
//                       gcry_cipher_encrypt then gcry_cipher_gettag; to open
//                       gcry_cipher_set_decryption_tag, then gcry_cipher_decrypt, which
//                       checks the tag (GPG_ERR_CHECKSUM and a zeroed output when wrong).
//                       The whole message goes in one encrypt or decrypt call (GCM-SIV needs
//                       all of it before the first output byte).  The reset is GCM-SIV's
//                       call order, unlike GCM's: setiv replaces the handle's AES key
//                       schedule with the message-encryption key derived from the nonce, and
//                       refuses a second nonce until gcry_cipher_reset has copied back the
//                       schedule setkey saved; that copy is part of each record's cost
//
// GCM-SIV derives its keys from each nonce, so the open benchmarks cannot reuse one record
// with a new nonce each time: they open, in turn, records sealed before the timed loop
// under nonces of their own (SealedRecords, aead_common.h).

#include "gcm_siv_bench.h"

#include <gcrypt.h>

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

constexpr size_t kGuardLen = 16;  // bytes after an output that nothing may write
constexpr uint8_t kGuardByte = 0xe5;
const std::vector<size_t> kVerifyLengths = {0, 1, 15, 16, 17, 255, 1420, 4100};

std::string Bits(int key_bits) { return std::to_string(key_bits); }

}  // namespace

// ---------------------------------------------------------------------------
// The implementations, behind one interface
//
// A GcmSivImpl is one AES-GCM-SIV implementation at one key size, with 12-byte nonces and
// 16-byte tags.  SetKey keys it.  Seal encrypts one record under the current key: `len`
// bytes from `in` to `out`, then the tag at out + len (out has room for len + 16 bytes;
// in != out).  Open takes `len` bytes of ciphertext at `in` followed by the tag, writes
// the plaintext to `out`, and returns whether the tag was right.

class GcmSivImpl {
 public:
  virtual ~GcmSivImpl() = default;
  virtual void SetKey(const uint8_t *key) = 0;
  virtual void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                    size_t len, uint8_t *out) = 0;
  virtual bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                    size_t len, uint8_t *out) = 0;
};

namespace {

#ifdef AESGEN_HAVE_AEAD
// A "gcm-siv" entry of the generated set's aesgen_aeads[].
class AesgenGcmSiv final : public GcmSivImpl {
 public:
  AesgenGcmSiv(const aesgen_aead &aead, int key_bits)
      : aead_(aead), key_len_(static_cast<size_t>(key_bits) / 8),
        ctx_(AlignedBuffer(aead.ctx_size)) {}
  ~AesgenGcmSiv() override {
    aead_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t *key) override {
    if (aead_.init(ctx_, key, key_len_) != 0)
      Die(std::string(aead_.name) + ": init refused a " + Bits(static_cast<int>(key_len_ * 8)) +
          "-bit key");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    if (aead_.seal(ctx_, nonce, kNonceLen, aad, aad_len, in, len, out, out + len, kTagLen) != 0)
      Die(std::string(aead_.name) + ": seal returned -1");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    return aead_.open(ctx_, nonce, kNonceLen, aad, aad_len, in, len, out, in + len, kTagLen) == 0;
  }

 private:
  const aesgen_aead &aead_;
  size_t key_len_;
  uint8_t *ctx_;
};

// The key sizes of kGcmSivKeyBits the kernel's init takes, found by asking it (RFC 8452
// has 16- and 32-byte keys; a set may have been generated for fewer); each one it refuses
// is named on stderr.
std::vector<int> AesgenGcmSivKeyBits(const aesgen_aead &a) {
  std::vector<int> bits;
  uint8_t *ctx = AlignedBuffer(a.ctx_size);
  const Key key = BaseKey();
  for (int b : kGcmSivKeyBits) {
    if (a.init(ctx, key.bytes, static_cast<size_t>(b) / 8) == 0)
      bits.push_back(b);
    else
      Skip(std::string(a.name) + "/" + Bits(b), "init refuses " + Bits(b) + "-bit keys");
  }
  a.wipe(ctx);
  std::free(ctx);
  return bits;
}
#endif  // AESGEN_HAVE_AEAD

// BoringSSL's EVP_AEAD API with its GCM-SIV AEADs (the library: aead_common.h).
class BoringSslGcmSiv final : public GcmSivImpl {
 public:
  BoringSslGcmSiv(const BoringSsl &lib, int key_bits)
      : lib_(lib),
        aead_(key_bits == 128   ? lib.aes_128_gcm_siv()
              : key_bits == 256 ? lib.aes_256_gcm_siv()
                                : nullptr),
        key_len_(static_cast<size_t>(key_bits) / 8) {
    if (aead_ == nullptr) Die("boringssl-gcm-siv: no AEAD for " + Bits(key_bits) + "-bit keys");
  }
  ~BoringSslGcmSiv() override {
    if (ctx_ != nullptr) lib_.ctx_free(ctx_);
  }

  void SetKey(const uint8_t *key) override {
    if (ctx_ != nullptr) lib_.ctx_free(ctx_);
    ctx_ = lib_.ctx_new(aead_, key, key_len_, kTagLen);
    if (ctx_ == nullptr) Die("boringssl-gcm-siv: EVP_AEAD_CTX_new failed");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    size_t out_len = 0;
    if (lib_.seal(ctx_, out, &out_len, len + kTagLen, nonce, kNonceLen, in, len, aad,
                  aad_len) != 1 ||
        out_len != len + kTagLen)
      Die("boringssl-gcm-siv: EVP_AEAD_CTX_seal of a " + std::to_string(len) +
          "-byte record failed");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    size_t out_len = 0;
    return lib_.open(ctx_, out, &out_len, len, nonce, kNonceLen, in, len + kTagLen, aad,
                     aad_len) == 1 &&
           out_len == len;
  }

 private:
  const BoringSsl &lib_;
  const void *aead_;
  size_t key_len_;
  void *ctx_ = nullptr;
};

#if GCRYPT_VERSION_NUMBER >= 0x010a00  // GCRY_CIPHER_MODE_GCM_SIV came with libgcrypt 1.10
// libgcrypt: one handle per key size, keyed once; each record starts with a reset (the
// call order is in the comment at the top).
class LibgcryptGcmSiv final : public GcmSivImpl {
 public:
  explicit LibgcryptGcmSiv(int key_bits) : key_len_(static_cast<size_t>(key_bits) / 8) {
    Check(gcry_cipher_open(&h_, key_bits == 128 ? GCRY_CIPHER_AES128 : GCRY_CIPHER_AES256,
                           GCRY_CIPHER_MODE_GCM_SIV, 0),
          "gcry_cipher_open");
  }
  ~LibgcryptGcmSiv() override { gcry_cipher_close(h_); }

  void SetKey(const uint8_t *key) override {
    Check(gcry_cipher_setkey(h_, key, key_len_), "gcry_cipher_setkey");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    gcry_error_t e = Start(nonce, aad, aad_len);
    if (!e) e = gcry_cipher_encrypt(h_, out, len, in, len);
    if (!e) e = gcry_cipher_gettag(h_, out + len, kTagLen);
    Check(e, "sealing a record");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    gcry_error_t e = Start(nonce, aad, aad_len);
    if (!e) e = gcry_cipher_set_decryption_tag(h_, in + len, kTagLen);
    if (!e) e = gcry_cipher_decrypt(h_, out, len, in, len);
    if (gcry_err_code(e) == GPG_ERR_CHECKSUM) return false;
    Check(e, "opening a record");
    return true;
  }

 private:
  gcry_error_t Start(const uint8_t *nonce, const uint8_t *aad, size_t aad_len) {
    gcry_error_t e = gcry_cipher_reset(h_);
    if (!e) e = gcry_cipher_setiv(h_, nonce, kNonceLen);
    if (!e) e = gcry_cipher_authenticate(h_, aad, aad_len);
    return e;
  }
  static void Check(gcry_error_t e, const char *what) {
    if (e) Die(std::string("libgcrypt-gcm-siv: ") + what + ": " + gcry_strerror(e));
  }
  gcry_cipher_hd_t h_ = nullptr;
  size_t key_len_;
};
#endif

// ---------------------------------------------------------------------------
// Which implementations this process runs

struct GcmSivFactory {
  std::string name;
  std::vector<int> key_bits;
  std::function<std::shared_ptr<GcmSivImpl>(int key_bits)> make;
};

const std::vector<int> kPeerKeyBits(std::begin(kGcmSivKeyBits), std::end(kGcmSivKeyBits));

// The indices in aesgen_aeads[] of the set's GCM-SIV kernels this process can time: mode
// "gcm-siv", every CPU feature they need present, 12-byte nonces and 16-byte tags taken,
// seal and open there; the others are named on stderr.
std::vector<size_t> RunnableGcmSivAeads() {
  std::vector<size_t> out;
#ifdef AESGEN_HAVE_AEAD
  const uint64_t have = aesgen_cpu_features();
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    const aesgen_aead &a = aesgen_aeads[i];
    if (std::strcmp(a.mode, "gcm-siv") != 0) continue;
    if (const uint64_t missing = a.features & ~have) {
      Skip(a.name, "needs" + AesgenFeatureNames(missing));
      continue;
    }
    if (kNonceLen < a.nonce_min || kNonceLen > a.nonce_max || kTagLen < a.tag_min ||
        kTagLen > a.tag_max || a.seal == nullptr || a.open == nullptr) {
      Skip(a.name, "does not seal and open with 12-byte nonces and 16-byte tags");
      continue;
    }
    out.push_back(i);
  }
#endif
  return out;
}

void AddAesgenGcmSiv(std::vector<GcmSivFactory> &factories) {
#ifdef AESGEN_HAVE_AEAD
  for (size_t i : RunnableGcmSivAeads()) {
    const aesgen_aead &a = aesgen_aeads[i];
    std::vector<int> bits = AesgenGcmSivKeyBits(a);
    if (bits.empty()) continue;
    factories.push_back({a.name, bits, [&a](int b) -> std::shared_ptr<GcmSivImpl> {
                           return std::make_shared<AesgenGcmSiv>(a, b);
                         }});
  }
#else
  (void)factories;  // this set's aesgen.h declares no AEAD kernels
#endif
}

// Why BoringSSL's GCM-SIV cannot be run here, or "" when it can.
std::string BoringSslGcmSivMissing() {
  const BoringSsl &lib = LoadBoringSsl();
  if (!lib.error.empty()) return lib.error;
  if (lib.aes_128_gcm_siv == nullptr || lib.aes_256_gcm_siv == nullptr)
    return lib.path + " has no EVP_aead_aes_128_gcm_siv or EVP_aead_aes_256_gcm_siv";
  return "";
}

// Why libgcrypt's GCM-SIV cannot be run here, or "" when it can: the headers built against
// and the library loaded must both be 1.10 or later.
std::string LibgcryptGcmSivMissing() {
  if (const std::string &why = LibgcryptError(); !why.empty()) return why;
#if GCRYPT_VERSION_NUMBER >= 0x010a00
  gcry_cipher_hd_t h = nullptr;
  if (const gcry_error_t e = gcry_cipher_open(&h, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_GCM_SIV, 0))
    return std::string("libgcrypt ") + gcry_check_version(nullptr) +
           " has no GCM-SIV mode: " + gcry_strerror(e);
  gcry_cipher_close(h);
  return "";
#else
  return std::string("built against libgcrypt ") + GCRYPT_VERSION +
         " headers; GCM-SIV came with 1.10";
#endif
}

std::shared_ptr<GcmSivImpl> MakeBoringSslGcmSiv(int key_bits) {
  return std::make_shared<BoringSslGcmSiv>(LoadBoringSsl(), key_bits);
}

std::shared_ptr<GcmSivImpl> MakeLibgcryptGcmSiv(int key_bits) {
#if GCRYPT_VERSION_NUMBER >= 0x010a00
  return std::make_shared<LibgcryptGcmSiv>(key_bits);
#else
  Die("libgcrypt-gcm-siv: " + LibgcryptGcmSivMissing() + " (" + Bits(key_bits) + "-bit key)");
#endif
}

// The peers, in the order they are registered; the first one this process runs is the
// reference of VerifyGcmSiv.
struct Peer {
  const char *name;
  std::string (*missing)();
  std::shared_ptr<GcmSivImpl> (*make)(int key_bits);
};
const Peer kPeers[] = {
    {"libgcrypt-gcm-siv", LibgcryptGcmSivMissing, MakeLibgcryptGcmSiv},
    {"boringssl-gcm-siv", BoringSslGcmSivMissing, MakeBoringSslGcmSiv},
};

// The reference: libgcrypt's GCM-SIV where it runs, else BoringSSL's; null when neither.
const Peer *Reference() {
  for (const Peer &p : kPeers)
    if (p.missing().empty()) return &p;
  return nullptr;
}

std::vector<GcmSivFactory> AvailableGcmSiv() {
  std::vector<GcmSivFactory> factories;
  if (NoAesniMode()) return factories;  // the child run times OpenSSL alone: no GCM-SIV there
  AddAesgenGcmSiv(factories);
  for (const Peer &p : kPeers) {
    if (const std::string why = p.missing(); !why.empty()) {
      Skip(p.name, why);
      continue;
    }
    factories.push_back({p.name, kPeerKeyBits, p.make});
  }
  return factories;
}

// ---------------------------------------------------------------------------
// The timed loops

void BenchSeal(benchmark::State &state, GcmSivImpl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  TlsNonces nonces;
  impl.Seal(nonces.Next(), RecordAad(), kAadLen, buf.in, size, buf.out);  // warm-up
  const uint64_t t0 = Ticks();
  for (auto _ : state) impl.Seal(nonces.Next(), RecordAad(), kAadLen, buf.in, size, buf.out);
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
  ReportTicksPerRecord(state, ticks);
}

void BenchOpen(benchmark::State &state, GcmSivImpl &impl, const std::string &label,
               size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  SealedRecords records(size, [&impl, &buf, size](const uint8_t *nonce, uint8_t *record) {
    impl.Seal(nonce, RecordAad(), kAadLen, buf.in, size, record);
  });
  bool ok = impl.Open(records.Nonce(0), RecordAad(), kAadLen, records.Record(0), size,
                      buf.out);  // warm-up
  size_t i = 1 % records.count();
  const uint64_t t0 = Ticks();
  for (auto _ : state) {
    ok &= impl.Open(records.Nonce(i), RecordAad(), kAadLen, records.Record(i), size, buf.out);
    i = i + 1 == records.count() ? 0 : i + 1;
  }
  const uint64_t ticks = Ticks() - t0;
  if (!ok) Die(label + ": open of a record it sealed itself failed during the benchmark");
  ReportPerByte(state, ticks, size);
  ReportTicksPerRecord(state, ticks);
}

// ---------------------------------------------------------------------------
// Correctness check before timing

// RFC 8452 Appendix C: two AES-128 vectors (C.1: 18 bytes of AAD and 20 of plaintext, both
// not multiples of 16; another key and nonce with 25 and 15), one AES-256 (C.2, 18 and 20)
// and C.3's counter wrap (the counter block's low 32 bits pass 2^32 - 1 within the
// message).  `result` is the ciphertext followed by the tag.
struct Rfc8452Vector {
  int bits;
  const char *key, *nonce, *aad, *plaintext, *result;
};
const Rfc8452Vector kRfc8452Vectors[] = {
    {128, "01000000000000000000000000000000", "030000000000000000000000",
     "010000000000000000000000000000000200", "0300000000000000000000000000000004000000",
     "6bb0fecf5ded9b77f902c7d5da236a4391dd029724afc9805e976f451e6d87f6fe106514"},
    {128, "2d4ed87da44102952ef94b02b805249b", "ac80e6f61455bfac8308a2d4",
     "2950a70d5a1db2316fd568378da107b52b0da55210cc1c1b0a", "0d8c8451178082355c9e940fea2f58",
     "c9ff545e07b88a015f05b274540aa183b3449b9f39552de99dc214a1190b0b"},
    {256, "0100000000000000000000000000000000000000000000000000000000000000",
     "030000000000000000000000", "010000000000000000000000000000000200",
     "0300000000000000000000000000000004000000",
     "43dd0163cdb48f9fe3212bf61b201976067f342bb879ad976d8242acc188ab59cabfe307"},
    {256, "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "",
     "000000000000000000000000000000004db923dc793ee6497c76dcc03a98e108",
     "f3f80f2cf0cb2dd9c5984fcda908456cc537703b5ba70324a6793a7bf218d3ea"
     "ffffffff000000000000000000000000"},
};

void CheckReferenceAgainstRfc8452(const Peer &ref) {
  for (const Rfc8452Vector &v : kRfc8452Vectors) {
    const std::vector<uint8_t> key = FromHex(v.key), nonce = FromHex(v.nonce),
                               aad = FromHex(v.aad), pt = FromHex(v.plaintext),
                               want = FromHex(v.result);
    const std::string what = std::string(ref.name) + " (the reference), AES-" + Bits(v.bits) +
                             ", a " + std::to_string(pt.size()) + "-byte RFC 8452 vector";
    std::shared_ptr<GcmSivImpl> impl = ref.make(v.bits);
    impl->SetKey(key.data());
    std::vector<uint8_t> got(want.size());
    impl->Seal(nonce.data(), aad.data(), aad.size(), pt.data(), pt.size(), got.data());
    if (got != want) Die(what + ": seal does not match RFC 8452; no reference to check against");
    std::vector<uint8_t> back(pt.size() + 1);
    if (!impl->Open(nonce.data(), aad.data(), aad.size(), want.data(), pt.size(), back.data()) ||
        !std::equal(pt.begin(), pt.end(), back.begin()))
      Die(what + ": open does not give the plaintext back; no reference to check against");
  }
}

void CheckGuard(const std::string &what, const std::vector<uint8_t> &buf, size_t from) {
  for (size_t i = from; i < buf.size(); i++)
    if (buf[i] != kGuardByte) Die(what + ": wrote past its output; refusing to benchmark it");
}

// Seals one record with `impl` and with `ref` (both keyed alike) and compares them; then
// `impl` opens the reference's record, and the same with a tag bit and a ciphertext bit
// changed, which it must refuse.
void CheckRecord(const std::string &what, GcmSivImpl &impl, GcmSivImpl &ref,
                 const uint8_t *nonce, size_t len) {
  const uint8_t *in = SharedBuffers().in;
  const std::string record = what + ", " + std::to_string(len) + "-byte record";
  std::vector<uint8_t> want(len + kTagLen), got(len + kTagLen + kGuardLen, kGuardByte);
  ref.Seal(nonce, RecordAad(), kAadLen, in, len, want.data());
  impl.Seal(nonce, RecordAad(), kAadLen, in, len, got.data());
  const size_t bad = std::mismatch(want.begin(), want.end(), got.begin()).first - want.begin();
  if (bad < len)
    Die(record + ": seal's ciphertext differs from the reference's from byte " +
        std::to_string(bad) + "; refusing to benchmark it");
  if (bad < want.size())
    Die(record + ": seal's ciphertext is right but its tag differs from the reference's; "
                 "refusing to benchmark it");
  CheckGuard(record + " (seal)", got, want.size());

  std::vector<uint8_t> plain(len + kGuardLen, kGuardByte);
  if (!impl.Open(nonce, RecordAad(), kAadLen, want.data(), len, plain.data()))
    Die(record + ": open refused the reference's record; refusing to benchmark it");
  if (!std::equal(in, in + len, plain.begin()))
    Die(record + ": open of the reference's record gave another plaintext; refusing to "
                 "benchmark it");
  CheckGuard(record + " (open)", plain, len);

  std::vector<uint8_t> forged = want;
  forged[len + 5] ^= 0x10;  // a tag bit
  if (impl.Open(nonce, RecordAad(), kAadLen, forged.data(), len, plain.data()))
    Die(record + ": open accepted a changed tag; refusing to benchmark it");
  if (len > 0) {
    forged = want;
    forged[len / 2] ^= 0x01;  // a ciphertext bit
    if (impl.Open(nonce, RecordAad(), kAadLen, forged.data(), len, plain.data()))
      Die(record + ": open accepted a changed ciphertext; refusing to benchmark it");
  }
}

void VerifyTarget(const GcmSivTarget &t, const Peer &ref_peer, const std::vector<size_t> &sizes) {
  GcmSivImpl &impl = *t.impl;
  std::shared_ptr<GcmSivImpl> ref = ref_peer.make(t.key_bits);
  const Key key = BaseKey();
  Key other = key;
  for (uint8_t &b : other.bytes) b ^= 0x5c;
  // another key first: the base key below must replace it completely
  TlsNonces nonces(7);
  impl.SetKey(other.bytes);
  ref->SetKey(other.bytes);
  CheckRecord(t.name + " (other key)", impl, *ref, nonces.Next(), 4100);
  impl.SetKey(key.bytes);
  ref->SetKey(key.bytes);
  // then a run of records under one key, each under the next nonce, as the benchmarks
  // seal them; the sequence number starts just below a carry out of its low 32 bits
  std::vector<size_t> lengths = kVerifyLengths;
  lengths.insert(lengths.end(), sizes.begin(), sizes.end());
  TlsNonces run((uint64_t{1} << 32) - 3);
  for (size_t i = 0; i < lengths.size(); i++)
    CheckRecord(t.name + " (record " + std::to_string(i + 1) + " after set-up)", impl, *ref,
                run.Next(), lengths[i]);
}

}  // namespace

// ---------------------------------------------------------------------------
// The interface (gcm_siv_bench.h)

std::vector<GcmSivTarget> RegisterGcmSiv(const std::vector<size_t> &sizes,
                                         const std::set<int> &key_bits,
                                         std::vector<std::string> &names) {
  std::vector<GcmSivTarget> targets;
  auto add = [&names](const std::string &name, std::function<void(benchmark::State &)> fn) {
    benchmark::RegisterBenchmark(name.c_str(), std::move(fn));
    names.push_back(name);
  };
  for (const GcmSivFactory &factory : AvailableGcmSiv()) {
    for (int bits : factory.key_bits) {
      if (!key_bits.empty() && !key_bits.count(bits)) continue;
      std::shared_ptr<GcmSivImpl> impl = factory.make(bits);
      const std::string label = factory.name + "/" + Bits(bits);
      targets.push_back({label, bits, impl});
      for (size_t size : sizes) {
        const std::string tail = "/" + Bits(bits) + "/" + std::to_string(size);
        add(factory.name + "/gcm_siv_seal" + tail,
            [impl, size](benchmark::State &st) { BenchSeal(st, *impl, size); });
        add(factory.name + "/gcm_siv_open" + tail,
            [impl, label, size](benchmark::State &st) { BenchOpen(st, *impl, label, size); });
      }
    }
  }
  return targets;
}

void VerifyGcmSiv(const std::vector<GcmSivTarget> &targets, const std::vector<size_t> &sizes) {
  if (targets.empty()) return;
  const Peer *ref = Reference();
  if (ref == nullptr)
    Die("no AES-GCM-SIV reference to check the GCM-SIV kernels against (neither libgcrypt "
        "1.10 or later nor BoringSSL: " +
        LibgcryptGcmSivMissing() + "; " + BoringSslGcmSivMissing() + ")");
  CheckReferenceAgainstRfc8452(*ref);
  for (const GcmSivTarget &t : targets) VerifyTarget(t, *ref, sizes);
}

}  // namespace aesgen_bench
