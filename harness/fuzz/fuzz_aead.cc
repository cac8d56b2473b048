// fuzz_aead.cc: a libFuzzer target for the AEAD contract (aesgen_aead in a
// generated set's aesgen.h), differential against the references of
// aead_reference.h: OpenSSL's EVP AES-GCM, the RFC 8452 GCM-SIV reference and
// the AES-OTR reference (both on OpenSSL's AES).  Built by `aesgen fuzz` with
// clang, ASan and UBSan.
//
// One input is one story on a fresh context, every choice the fuzzer's: which
// kernel (of those this CPU runs; AESGEN_FUZZ_KERNELS narrows them), a key of
// a length the mode takes or not (init must answer 0 or -1 accordingly), an
// optional first key that init must make the kernel forget, nonce and tag
// lengths in range or just out of it, AAD and message lengths (long ones up
// to 70000 bytes grown from a seed), in place or not, NULL pointers for empty
// buffers, buffers against a guard page on either side.  Then: seal (against
// the reference; out of range: -1 and nothing written), open of what seal made
// (0, the plaintext), open of a tampered copy (a bit of the ciphertext, AAD,
// tag or nonce flipped: -1 and out all zero, unless the reference itself says
// the tampered tag is right, which a 1-byte OTR tag makes likely), lengths
// over the mode's limit (-1, nothing written), streaming where the kernel has
// it (AAD and data in fuzzer-cut pieces, finish_seal and finish_open, a wrong
// tag refused, AAD after data refused), and wipe (the context all zero).
// Any difference, stray write, changed input or fault is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "aead_reference.h"
#include "aesgen.h"
#include "fuzz_common.h"

namespace {

constexpr size_t kShortMax = 1500;
constexpr size_t kLongMax = 70000;
constexpr size_t kMaxPieces = 8;
constexpr size_t kRefNonceMax = 128;  // OpenSSL 3 takes GCM nonces of 1..128 bytes

enum class Mode { kGcm, kSiv, kOtr };

struct Kernel {
  const aesgen_aead *a;
  Mode mode;
  OtrVariant otr;  // for kOtr
};

// The kernel with the reference its mode is checked against, or nothing.
std::optional<Kernel> WithReference(const aesgen_aead &a, std::string *why) {
  Kernel k{&a, Mode::kGcm, {}};
  if (std::strcmp(a.mode, "gcm") == 0) {
    k.mode = Mode::kGcm;
  } else if (std::strcmp(a.mode, "gcm-siv") == 0) {
    k.mode = Mode::kSiv;
  } else if (OtrVariantOfMode(a.mode, &k.otr)) {
    k.mode = Mode::kOtr;
  } else {
    *why = std::string("no reference for mode ") + a.mode;
    return std::nullopt;
  }
  return k;
}

const std::vector<Kernel> &Kernels() {
  static const std::vector<Kernel> kernels =
      SelectKernels<Kernel>("fuzz_aead", aesgen_aeads, aesgen_aead_count, WithReference);
  return kernels;
}

size_t MaxContext() {
  return MaxContext(Kernels(), [](const Kernel &k) { return k.a->ctx_size; });
}

bool KeyLenTaken(const Kernel &k, size_t key_len) {
  const unsigned bits = aesgen_key_bits_supported;
  switch (key_len) {
    case 16: return (bits & 1) != 0;
    case 24: return k.mode == Mode::kGcm && (bits & 2) != 0;
    case 32: return (bits & 4) != 0;
    default: return false;
  }
}

size_t ChooseKeyLen(const Kernel &k, FuzzedDataProvider &in) {
  const uint8_t c = in.ConsumeIntegral<uint8_t>();
  if (c >= 240) return in.ConsumeIntegralInRange<size_t>(0, 40);
  static const size_t kLens[] = {16, 24, 32};
  for (size_t i = 0; i < 3; i++) {
    const size_t len = kLens[(c + i) % 3];
    if (KeyLenTaken(k, len)) return len;
  }
  return 16;
}

// The mode's limits on message and AAD (RFC 8452 section 6, SP 800-38D);
// 0 where none is checked here.
uint64_t MaxLen(Mode m) {
  return m == Mode::kGcm ? (uint64_t{1} << 36) - 32 : m == Mode::kSiv ? uint64_t{1} << 36 : 0;
}
uint64_t MaxAad(Mode m) {
  return m == Mode::kGcm ? (uint64_t{1} << 61) - 1 : m == Mode::kSiv ? uint64_t{1} << 36 : 0;
}

// The reference's ciphertext and 16-byte tag block (for OTR the tag length is
// part of the input: the first tag_len bytes are the tag).
void RefSeal(const Kernel &k, const Bytes &key, const Bytes &nonce, const Bytes &aad,
             const Bytes &pt, size_t tag_len, Bytes *ct, Block16 *tag) {
  ct->assign(pt.size(), 0);
  switch (k.mode) {
    case Mode::kGcm:
      OracleSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct->data(), tag->data());
      break;
    case Mode::kSiv:
      SivSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct->data(), tag->data());
      break;
    case Mode::kOtr:
      OtrCrypt(key, k.otr, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(), pt.data(),
               pt.size(), ct->data(), false, tag->data());
      break;
  }
}

// Whether the reference opens (nonce, aad, ct, tag): the tag is the one it
// expects for that input.
bool RefAccepts(const Kernel &k, const Bytes &key, const Bytes &nonce, const Bytes &aad,
                const Bytes &ct, const uint8_t *tag, size_t tag_len) {
  Bytes pt(ct.size()), again;
  Block16 want{};
  switch (k.mode) {
    case Mode::kGcm: {
      Block16 unused;
      // CTR is its own inverse: sealing the ciphertext yields the plaintext.
      OracleSeal(key, nonce, nullptr, 0, ct.data(), ct.size(), pt.data(), unused.data());
      RefSeal(k, key, nonce, aad, pt, tag_len, &again, &want);
      break;
    }
    case Mode::kSiv: {
      Block16 t;
      Copy(t.data(), tag, 16);
      SivCtr(SivDeriveKeys(key, nonce.data()).enc, t, ct.data(), ct.size(), pt.data());
      RefSeal(k, key, nonce, aad, pt, tag_len, &again, &want);
      break;
    }
    case Mode::kOtr:
      OtrCrypt(key, k.otr, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(), ct.data(),
               ct.size(), pt.data(), true, want.data());
      break;
  }
  return Same(want.data(), tag, tag_len);
}

GuardedArena &Arena(int which) {
  static GuardedArena arenas[] = {
      GuardedArena(kLongMax, "in"),  GuardedArena(kLongMax, "out"),  GuardedArena(64, "key"),
      GuardedArena(kRefNonceMax + 1, "nonce"), GuardedArena(kLongMax, "aad"), GuardedArena(32, "tag")};
  return arenas[which];
}
enum { kIn, kOut, kKey, kNonce, kAad, kTag, kArenas };

bool AllCanaries() {
  for (int i = 0; i < kArenas; i++) {
    if (!Arena(i).CanariesIntact()) return false;
  }
  return true;
}

// The data of one story, and the checks that name it.
class Story {
 public:
  Story(const Kernel &k, ContextBuffer &ctx) : k_(k), a_(*k.a), ctx_buf_(ctx) {}

  void Note(const std::string &s) { story_ += s + "; "; }
  void Check(bool ok, const std::string &what) const {
    if (!ok) Finding(what, std::string(a_.name) + ": " + story_);
    if (!ctx_buf_.TailIntact()) Finding("a write at or past ctx_size", std::string(a_.name) + ": " + story_);
  }

  // A copy of v in the arena, at its start or end; NULL for an empty one when asked.
  uint8_t *Put(int arena, const Bytes &v, bool at_end, bool null_empty) {
    uint8_t *p = Arena(arena).Place(v.size(), at_end);
    if (!v.empty()) Copy(p, v.data(), v.size());
    return v.empty() && null_empty ? nullptr : p;
  }

  const Kernel &k_;
  const aesgen_aead &a_;
  ContextBuffer &ctx_buf_;
  std::string story_;
};

bool AllZero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Cuts [0, n) into up to kMaxPieces pieces at fuzzer-chosen points.
std::vector<size_t> Cuts(FuzzedDataProvider &in, size_t n) {
  const size_t pieces = in.ConsumeIntegralInRange<size_t>(1, kMaxPieces);
  std::vector<size_t> cuts;
  for (size_t i = 0; i + 1 < pieces; i++) cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, n));
  cuts.push_back(n);
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

void Streaming(Story &st, void *ctx, FuzzedDataProvider &in, const Bytes &nonce, const Bytes &aad,
               const Bytes &pt, const Bytes &ct, const Block16 &tag, size_t tag_len, bool at_end,
               bool null_empty) {
  const aesgen_aead &a = st.a_;
  const std::vector<size_t> aad_cuts = Cuts(in, aad.size()), data_cuts = Cuts(in, pt.size());
  for (int decrypt = 0; decrypt < 2; decrypt++) {
    const Bytes &src = decrypt ? ct : pt, &want = decrypt ? pt : ct;
    st.Note(std::string(decrypt ? "streaming decrypt" : "streaming encrypt") + " (aad cut " +
            std::to_string(aad_cuts.size()) + ", data cut " + std::to_string(data_cuts.size()) + ")");
    uint8_t *np = st.Put(kNonce, nonce, at_end, null_empty);
    st.Check(a.start(ctx, np, nonce.size()) == 0, "start refused a nonce in range");
    size_t prev = 0;
    for (size_t cut : aad_cuts) {
      Bytes piece(aad.begin() + prev, aad.begin() + cut);
      uint8_t *p = st.Put(kAad, piece, !at_end, null_empty);
      st.Check(a.aad(ctx, p, piece.size()) == 0, "aad refused a piece at AAD byte " + std::to_string(prev));
      prev = cut;
    }
    prev = 0;
    bool data_began = false;
    for (size_t cut : data_cuts) {
      Bytes piece(src.begin() + prev, src.begin() + cut);
      uint8_t *out = Arena(kOut).Place(piece.size(), at_end);
      uint8_t *ip = st.Put(kIn, piece, !at_end, null_empty);
      uint8_t *op = piece.empty() && null_empty ? nullptr : out;
      const int r = decrypt ? a.decrypt(ctx, ip, piece.size(), op) : a.encrypt(ctx, ip, piece.size(), op);
      st.Check(r == 0, "a data piece was refused at byte " + std::to_string(prev));
      const size_t d = FirstDiff(out, want.data() + prev, piece.size());
      st.Check(d == piece.size(), "streamed output differs from the reference at byte " +
                                      std::to_string(prev + d));
      st.Check(AllCanaries(), "a streaming call wrote beside its buffers");
      data_began = data_began || !piece.empty();
      prev = cut;
    }
    if (data_began) {
      uint8_t one = 0;
      st.Check(a.aad(ctx, &one, 1) == -1, "aad after data began was taken");
    }
    uint8_t *tp = Arena(kTag).Place(16, at_end);
    if (decrypt) {
      Copy(tp, tag.data(), 16);
      uint8_t bad = static_cast<uint8_t>(1u << (in.ConsumeIntegral<uint8_t>() & 7));
      const bool tamper = in.ConsumeBool();
      // A flipped tag bit over unchanged inputs is never the right tag.
      if (tamper) tp[in.ConsumeIntegralInRange<size_t>(0, tag_len - 1)] ^= bad;
      const int r = a.finish_open(ctx, tp, tag_len);
      st.Check(r == (tamper ? -1 : 0), std::string("finish_open returned ") + std::to_string(r) +
                                            (tamper ? " for a tampered tag" : " for the right tag"));
    } else {
      std::memset(tp, 0xee, 16);
      st.Check(a.finish_seal(ctx, tp, tag_len) == 0, "finish_seal refused a tag length in range");
      st.Check(Same(tp, tag.data(), tag_len), "streamed tag differs from the reference (got " +
                                                              HexOf(tp, tag_len) + ", want " +
                                                              HexOf(tag.data(), tag_len) + ")");
      for (size_t i = tag_len; i < 16; i++) st.Check(tp[i] == 0xee, "finish_seal wrote past tag_len");
    }
    st.Check(AllCanaries(), "finish wrote beside its tag");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::vector<Kernel> &kernels = Kernels();
  if (kernels.empty()) return 0;
  static ContextBuffer ctx_buf(MaxContext());
  FuzzedDataProvider in(data, size);

  const Kernel &k = kernels[in.ConsumeIntegral<uint16_t>() % kernels.size()];
  const aesgen_aead &a = *k.a;
  void *ctx = ctx_buf.Fresh(a.ctx_size, in.ConsumeIntegral<uint8_t>());
  Story st(k, ctx_buf);

  const uint16_t flags = in.ConsumeIntegral<uint16_t>();
  const bool rekey = flags & 1, in_place = flags & 2, null_empty = flags & 4, at_end = flags & 8,
             tamper = flags & 16, stream = flags & 32, long_msg = (flags & 0xc0) == 0xc0,
             bad_nonce = (flags & 0x700) == 0x700, bad_tag = (flags & 0x3800) == 0x3800,
             over_limit = (flags & 0xc000) == 0xc000;

  if (rekey) {
    Bytes old_key = in.ConsumeBytes<uint8_t>(32);
    old_key.resize(KeyLenTaken(k, 32) ? 32 : 16);
    uint8_t *kp = st.Put(kKey, old_key, true, false);
    st.Note("init with another key, a seal under it");
    st.Check(a.init(ctx, kp, old_key.size()) == 0, "init refused a valid key");
    Bytes nonce(std::max<size_t>(a.nonce_min, std::min<size_t>(12, a.nonce_max)), 0x11);
    uint8_t junk[40] = {0}, tag[16];
    st.Check(a.seal(ctx, nonce.data(), nonce.size(), junk, 7, junk, 33, junk, tag, a.tag_max) == 0,
             "seal under the first key refused");
  }

  const size_t key_len = ChooseKeyLen(k, in);
  Bytes key = in.ConsumeBytes<uint8_t>(key_len);
  key.resize(key_len);
  uint8_t *kp = st.Put(kKey, key, at_end, false);
  st.Note("init(key " + std::to_string(key_len) + " bytes " + HexOf(key.data(), key_len) + ")");
  const int ri = a.init(ctx, kp, key_len);
  if (!KeyLenTaken(k, key_len)) {
    st.Check(ri == -1, "init took a key length the mode or set does not");
    return 0;
  }
  st.Check(ri == 0, "init refused a key length the mode takes");
  st.Check(AllCanaries(), "init wrote beside its key");

  // Nonce and tag lengths: in range, or (bad_*) just out of it.
  const size_t nonce_hi = std::min(a.nonce_max, kRefNonceMax);
  size_t nonce_len = in.ConsumeBool() && a.nonce_min <= 12 && 12 <= nonce_hi
                         ? 12
                         : in.ConsumeIntegralInRange<size_t>(a.nonce_min, nonce_hi);
  if (bad_nonce) nonce_len = a.nonce_min > 0 && (in.ConsumeBool() || a.nonce_max >= kRefNonceMax)
                                 ? a.nonce_min - 1
                                 : a.nonce_max + 1;
  const bool nonce_ok = nonce_len >= a.nonce_min && nonce_len <= a.nonce_max;
  size_t tag_len = in.ConsumeIntegralInRange<size_t>(a.tag_min, a.tag_max);
  if (bad_tag) tag_len = in.ConsumeBool() && a.tag_min > 0 ? a.tag_min - 1 : a.tag_max + 1;
  const bool tag_ok = tag_len >= a.tag_min && tag_len <= a.tag_max;
  const size_t hi = long_msg ? kLongMax : kShortMax;
  const size_t aad_len = in.ConsumeIntegralInRange<size_t>(0, in.ConsumeBool() ? 40 : hi);
  const size_t len = in.ConsumeIntegralInRange<size_t>(0, hi);
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  const uint8_t pick = in.ConsumeIntegral<uint8_t>();
  const size_t tamper_at = in.ConsumeIntegral<uint32_t>();
  const uint8_t tamper_bit = static_cast<uint8_t>(1u << (pick & 7));
  Bytes nonce = in.ConsumeBytes<uint8_t>(nonce_len);
  nonce.resize(nonce_len);
  Bytes aad = GrowBytes(in.ConsumeBytes<uint8_t>(aad_len), aad_len, seed * 3 + 1);
  Bytes pt = GrowBytes(in.ConsumeBytes<uint8_t>(len), len, seed);
  st.Note("nonce " + std::to_string(nonce_len) + " bytes " + HexOf(nonce.data(), nonce_len) +
          ", aad " + std::to_string(aad_len) + ", message " + std::to_string(len) + ", tag_len " +
          std::to_string(tag_len) + (in_place ? ", in place" : "") + (at_end ? ", buffers at end" : ""));

  // seal
  uint8_t *np = st.Put(kNonce, nonce, at_end, null_empty);
  uint8_t *ap = st.Put(kAad, aad, !at_end, null_empty);
  uint8_t *out = Arena(kOut).Place(len, at_end);
  std::memset(out, 0xd7, len);
  uint8_t *ip = in_place ? out : st.Put(kIn, pt, !at_end, null_empty);
  if (in_place && len > 0) Copy(out, pt.data(), len);
  uint8_t *tp = Arena(kTag).Place(16, !at_end);
  std::memset(tp, 0xee, 16);
  uint8_t *op = len == 0 && null_empty ? nullptr : out;
  if (in_place) ip = op;
  st.Note("seal");
  const int rs = a.seal(ctx, np, nonce_len, ap, aad_len, ip, len, op, tp, tag_len);
  st.Check(AllCanaries(), "seal wrote beside its buffers");
  if (!nonce_ok || !tag_ok) {
    st.Check(rs == -1, "seal took a nonce or tag length out of range");
    for (size_t i = 0; i < 16; i++) st.Check(tp[i] == 0xee, "a refused seal wrote its tag");
    if (!in_place) {
      for (size_t i = 0; i < len; i++) st.Check(out[i] == 0xd7, "a refused seal wrote out");
    } else {
      st.Check(Same(out, pt.data(), len), "a refused seal changed out (in place)");
    }
    return 0;
  }
  st.Check(rs == 0, "seal refused lengths in range");
  Bytes ct;
  Block16 tag{};
  RefSeal(k, key, nonce, aad, pt, tag_len, &ct, &tag);
  size_t d = FirstDiff(out, ct.data(), len);
  st.Check(d == len, "ciphertext differs from the reference at byte " + std::to_string(d));
  st.Check(Same(tp, tag.data(), tag_len),
           "tag differs from the reference (got " + HexOf(tp, tag_len) + ", want " +
               HexOf(tag.data(), tag_len) + ")");
  for (size_t i = tag_len; i < 16; i++) st.Check(tp[i] == 0xee, "seal wrote past tag_len");
  if (!in_place) st.Check(Same(ip, pt.data(), len), "seal changed its input");

  // open what seal made, and (tamper) a copy with a bit flipped
  for (int t = 0; t < (tamper ? 2 : 1); t++) {
    Bytes n2 = nonce, a2 = aad, c2 = ct;
    Block16 t2 = tag;
    std::string what = "open";
    if (t == 1) {
      const unsigned where = pick >> 3 & 3;
      if (where == 0 && len > 0) {
        c2[tamper_at % len] ^= tamper_bit;
        what += " of ciphertext byte " + std::to_string(tamper_at % len) + " flipped";
      } else if (where == 1 && aad_len > 0) {
        a2[tamper_at % aad_len] ^= tamper_bit;
        what += " of AAD byte " + std::to_string(tamper_at % aad_len) + " flipped";
      } else if (where == 2 && nonce_len > 0) {
        n2[tamper_at % nonce_len] ^= tamper_bit;
        what += " of nonce byte " + std::to_string(tamper_at % nonce_len) + " flipped";
      } else {
        t2[tamper_at % tag_len] ^= tamper_bit;
        what += " of tag byte " + std::to_string(tamper_at % tag_len) + " flipped";
      }
    }
    st.Note(what);
    np = st.Put(kNonce, n2, at_end, null_empty);
    ap = st.Put(kAad, a2, !at_end, null_empty);
    out = Arena(kOut).Place(len, !at_end);
    std::memset(out, 0xd7, len);
    ip = in_place ? out : st.Put(kIn, c2, at_end, null_empty);
    if (in_place && len > 0) Copy(out, c2.data(), len);
    op = len == 0 && null_empty ? nullptr : out;
    if (in_place) ip = op;
    tp = st.Put(kTag, Bytes(t2.begin(), t2.begin() + tag_len), at_end, false);
    const int ro = a.open(ctx, np, nonce_len, ap, aad_len, ip, len, op, tp, tag_len);
    st.Check(AllCanaries(), "open wrote beside its buffers");
    const bool right = t == 0 || RefAccepts(k, key, n2, a2, c2, t2.data(), tag_len);
    if (right) {
      st.Check(ro == 0, "open refused a tag the reference accepts");
      if (t == 0) {
        d = FirstDiff(out, pt.data(), len);
        st.Check(d == len, "opened plaintext differs at byte " + std::to_string(d));
      }
    } else {
      st.Check(ro == -1, "open accepted a forgery (the reference refuses it)");
      st.Check(AllZero(out, len), "a refused open left non-zero bytes in out");
    }
    if (!in_place) st.Check(Same(ip, c2.data(), len), "open changed its input");
  }

  // lengths over the mode's limit: -1 and nothing written, nothing read
  if (over_limit && MaxLen(k.mode) != 0) {
    const bool aad_over = pick & 0x80;
    const uint64_t big_aad = aad_over ? MaxAad(k.mode) + 1 : aad_len;
    const uint64_t big_len = aad_over ? len : MaxLen(k.mode) + 1;
    st.Note(aad_over ? "seal/open with AAD over the limit" : "seal/open with a message over the limit");
    const size_t room = std::max<size_t>(64, len);  // big_len may be len itself
    np = st.Put(kNonce, nonce, at_end, false);
    out = Arena(kOut).Place(room, at_end);
    std::memset(out, 0xd7, room);
    tp = Arena(kTag).Place(16, !at_end);
    std::memset(tp, 0xee, 16);
    st.Check(a.seal(ctx, np, nonce_len, ap, big_aad, out, big_len, out, tp, tag_len) == -1,
             "seal took a length over the limit");
    st.Check(a.open(ctx, np, nonce_len, ap, big_aad, out, big_len, out, tp, tag_len) == -1,
             "open took a length over the limit");
    for (size_t i = 0; i < room; i++) st.Check(out[i] == 0xd7, "a call over the limit wrote out");
    for (size_t i = 0; i < 16; i++) st.Check(tp[i] == 0xee, "a call over the limit wrote the tag");
  }

  if (stream && a.start != nullptr) {
    Streaming(st, ctx, in, nonce, aad, pt, ct, tag, tag_len, at_end, null_empty);
  }

  a.wipe(ctx);
  st.Note("wipe");
  st.Check(ctx_buf.AllZero(), "wipe left a non-zero byte in the context");
  return 0;
}
