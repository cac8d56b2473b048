// fuzz_ctr.cc: a libFuzzer target for the CTR contract (aesgen_kernel in a
// generated set's aesgen.h), differential against OpenSSL's EVP AES-CTR
// (ctr_reference.h).  Built by `aesgen fuzz` with clang, ASan and UBSan.
//
// One input is one story on a fresh context, every choice the fuzzer's: which
// kernel (of those this CPU runs, AESGEN_FUZZ_KERNELS narrowing them), a key of
// a length the set takes or not (init must answer 0 or -1 accordingly), an
// optional first key that the second init must make the kernel forget, an IV
// (optionally with its low 32 or 64 bits a few blocks short of the carry),
// the stream cut into pieces of any length (0 and 1 included, NULL pointers
// for empty ones), in place or not, buffers against a guard page on either
// side, a set_iv part way that restarts the stream, and wipe at the end
// (the context all zero).  Any difference from the reference, a stray write,
// a changed input or a fault is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "aesgen.h"
#include "ctr_reference.h"
#include "fuzz_common.h"

namespace {

constexpr size_t kShortMax = 2048;
constexpr size_t kLongMax = 70000;  // past 64 KiB: every batch shape, a 4096-byte FACE window 17 times
constexpr size_t kMaxPieces = 12;

const std::vector<const aesgen_kernel *> &Kernels() {
  static const std::vector<const aesgen_kernel *> kernels =
      SelectKernels<const aesgen_kernel *>(
          "fuzz_ctr", aesgen_kernels, aesgen_kernel_count,
          [](const aesgen_kernel &k, std::string *) { return std::optional(&k); });
  return kernels;
}

size_t MaxContext() {
  return MaxContext(Kernels(), [](const aesgen_kernel *k) { return k->ctx_size; });
}

bool KeyLenTaken(size_t key_len) {
  switch (key_len) {
    case 16: return (aesgen_key_bits_supported & 1) != 0;
    case 24: return (aesgen_key_bits_supported & 2) != 0;
    case 32: return (aesgen_key_bits_supported & 4) != 0;
    default: return false;
  }
}

// A key length: mostly one the set takes, now and then any length up to 40.
size_t ChooseKeyLen(FuzzedDataProvider &in) {
  const uint8_t c = in.ConsumeIntegral<uint8_t>();
  if (c >= 240) return in.ConsumeIntegralInRange<size_t>(0, 40);
  static const size_t kLens[] = {16, 24, 32};
  for (size_t i = 0; i < 3; i++) {
    const size_t len = kLens[(c + i) % 3];
    if (KeyLenTaken(len)) return len;
  }
  return 16;
}

// The counter IV: the fuzzer's bytes, and on request the low 32 or 64 bits
// set a few blocks short of their carry.
std::vector<uint8_t> ChooseIv(FuzzedDataProvider &in) {
  std::vector<uint8_t> iv = in.ConsumeBytes<uint8_t>(16);
  iv.resize(16);
  const uint8_t wrap = in.ConsumeIntegral<uint8_t>();
  if (wrap >= 160) {
    const size_t from = wrap >= 208 ? 8 : 12;
    for (size_t i = from; i < 16; i++) iv[i] = 0xff;
    iv[15] = static_cast<uint8_t>(0xff - (wrap & 31));
  }
  return iv;
}

class CtrStory {
 public:
  CtrStory(const aesgen_kernel &k, void *ctx, ContextBuffer &ctx_buf)
      : k_(k), ctx_(ctx), ctx_buf_(ctx_buf) {}

  void Note(const std::string &s) { story_ += s + "; "; }
  std::string Situation() const { return std::string(k_.name) + ": " + story_; }
  void Check(bool ok, const std::string &what) {
    if (!ok) Finding(what, Situation());
    if (!ctx_buf_.TailIntact()) Finding("a write at or past ctx_size", Situation());
  }

  const aesgen_kernel &k_;
  void *ctx_;
  ContextBuffer &ctx_buf_;
  std::string story_;
};

GuardedArena &InArena() {
  static GuardedArena a(kLongMax, "in");
  return a;
}
GuardedArena &OutArena() {
  static GuardedArena a(kLongMax, "out");
  return a;
}
GuardedArena &KeyArena() {
  static GuardedArena a(64, "key");
  return a;
}
GuardedArena &IvArena() {
  static GuardedArena a(16, "iv");
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::vector<const aesgen_kernel *> &kernels = Kernels();
  if (kernels.empty()) return 0;
  static ContextBuffer ctx_buf(MaxContext());
  FuzzedDataProvider in(data, size);

  const aesgen_kernel &k = *kernels[in.ConsumeIntegral<uint16_t>() % kernels.size()];
  void *ctx = ctx_buf.Fresh(k.ctx_size, in.ConsumeIntegral<uint8_t>());
  CtrStory st(k, ctx, ctx_buf);

  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  const bool rekey = flags & 1, in_place = flags & 2, null_empty = flags & 4,
             in_at_end = flags & 8, out_at_end = flags & 16, restart = flags & 32,
             long_stream = (flags & 0xc0) == 0xc0;

  // A first key, used and then replaced: init must forget it.
  if (rekey) {
    std::vector<uint8_t> old_key = in.ConsumeBytes<uint8_t>(32), old_iv(16, 0x5a);
    old_key.resize(32);
    uint8_t *ok = KeyArena().Place(32, true);
    Copy(ok, old_key.data(), 32);
    const int r = k.init(ctx, ok, KeyLenTaken(32) ? 32 : 16, old_iv.data());
    st.Note("init with another key");
    st.Check(r == 0, "init with a valid key returned " + std::to_string(r));
    uint8_t junk[64];
    k.xor_stream(ctx, junk, junk, sizeof junk);
  }

  const size_t key_len = ChooseKeyLen(in);
  std::vector<uint8_t> key = in.ConsumeBytes<uint8_t>(key_len);
  key.resize(key_len);
  const std::vector<uint8_t> iv = ChooseIv(in);
  uint8_t *key_p = KeyArena().Place(key_len, in_at_end);
  if (key_len > 0) Copy(key_p, key.data(), key_len);
  uint8_t *iv_p = IvArena().Place(16, !in_at_end);
  Copy(iv_p, iv.data(), 16);
  st.Note("init(key " + std::to_string(key_len) + " bytes " + HexOf(key.data(), key_len) + ", iv " +
          HexOf(iv.data(), 16) + ")");
  const int r = k.init(ctx, key_p, key_len, iv_p);
  if (!KeyLenTaken(key_len)) {
    st.Check(r == -1, "init took a key length the set does not (" + std::to_string(key_len) + ")");
    return 0;
  }
  st.Check(r == 0, "init refused a key length the set takes");
  st.Check(KeyArena().CanariesIntact() && IvArena().CanariesIntact(), "init wrote near its key or iv");

  // The stream and its pieces.
  const size_t total = in.ConsumeIntegralInRange<size_t>(0, long_stream ? kLongMax : kShortMax);
  const size_t pieces = in.ConsumeIntegralInRange<size_t>(1, kMaxPieces);
  const size_t restart_at = restart ? in.ConsumeIntegralInRange<size_t>(0, pieces - 1) : pieces;
  std::vector<uint8_t> new_iv = restart ? ChooseIv(in) : iv;
  std::vector<size_t> cuts;
  for (size_t i = 0; i + 1 < pieces; i++) cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, total));
  cuts.push_back(total);
  std::sort(cuts.begin(), cuts.end());
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  const std::vector<uint8_t> msg = GrowBytes(in.ConsumeRemainingBytes<uint8_t>(), total, seed);

  // What the stream must be: before the restart, AES-CTR from iv; after it,
  // from new_iv starting again at its first block.
  size_t restart_offset = total;
  {
    size_t prev = 0;
    for (size_t i = 0; i < pieces; i++) {
      if (i == restart_at) restart_offset = prev;
      prev = cuts[i];
    }
  }
  std::vector<uint8_t> want(total);
  OracleCtr(key.data(), key_len, iv.data(), msg.data(), want.data(), restart_offset);
  OracleCtr(key.data(), key_len, new_iv.data(), msg.data() + restart_offset,
            want.data() + restart_offset, total - restart_offset);

  size_t prev = 0;
  for (size_t i = 0; i < pieces; i++) {
    const size_t n = cuts[i] - prev;
    if (i == restart_at) {
      uint8_t *nv = IvArena().Place(16, in_at_end);
      Copy(nv, new_iv.data(), 16);
      st.Note("set_iv(" + HexOf(new_iv.data(), 16) + ")");
      st.Check(k.set_iv(ctx, nv) == 0, "set_iv returned non-zero");
    }
    uint8_t *out = OutArena().Place(n, out_at_end);
    uint8_t *src = in_place ? out : InArena().Place(n, in_at_end);
    Copy(src, msg.data() + prev, n);
    st.Note("xor_stream(" + std::to_string(n) + (in_place ? ", in place" : "") + ") at " +
            std::to_string(prev));
    const bool null = n == 0 && null_empty;
    k.xor_stream(ctx, null ? nullptr : out, null ? nullptr : src, n);
    const size_t d = FirstDiff(out, want.data() + prev, n);
    st.Check(d == n, "keystream differs from OpenSSL at stream byte " + std::to_string(prev + d) +
                         " (got " + HexOf(out + d, std::min<size_t>(16, n - d)) + ", want " +
                         HexOf(want.data() + prev + d, std::min<size_t>(16, n - d)) + ")");
    st.Check(OutArena().CanariesIntact(), "xor_stream wrote outside out[0..len)");
    if (!in_place) {
      st.Check(Same(src, msg.data() + prev, n), "xor_stream changed its input");
      st.Check(InArena().CanariesIntact(), "xor_stream wrote beside its input");
    }
    prev = cuts[i];
  }

  k.wipe(ctx);
  st.Note("wipe");
  st.Check(ctx_buf.AllZero(), "wipe left a non-zero byte in the context");
  return 0;
}
