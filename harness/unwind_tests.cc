// unwind_tests.cc: the kernels' unwind information (DWARF CFI, from the frame pass) is right
// at every instruction, shown by single-stepping each entry point (x86-64; issue 18).
//
// A trampoline (below, in assembly) loads distinctive values into the callee-saved registers
// rbx, rbp, r12-r15, sets the trap flag and calls the entry point; the CPU then stops after
// every instruction with SIGTRAP. At each stop inside the kernel (its entry point or a local
// function it calls), the handler unwinds from the interrupted context with the system
// unwinder (libgcc's _Unwind_Backtrace, through the signal frame) and checks that the walk
// reaches the trampoline's return address within a few frames, that the frame below it has
// the stack pointer the trampoline had at the call as its CFA, and that the unwound rbx, rbp,
// r12-r15 of the trampoline's frame are its values. That is what a debugger, a profiler or a
// C++ exception thrown through a kernel relies on.
//
// AArch64 is not checked here: under qemu-user there is no single-step (no ptrace, no trap
// flag), so these tests are x86-64 only (the AArch64 CFI is assembled and its byte-equal
// Mach-O twin checked in tests/test_flavours.py).
#include <gtest/gtest.h>

#if defined(__x86_64__)

#include <signal.h>
#include <unwind.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "aesgen.h"
#include "harness_util.h"

extern "C" {
uint64_t aesgen_step_call(const void *fn, const uint64_t *args);
extern char aesgen_step_call_begin[], aesgen_step_return[], aesgen_step_call_end[];
extern uint64_t aesgen_step_rsp;
uint64_t aesgen_step_rsp;
// test functions with right and wrong CFI, for the check's own test
void aesgen_step_good(void);
void aesgen_step_bad_offset(void);
void aesgen_step_bad_cfa(void);
}

// rbx, rbp, r12, r13, r14, r15: their DWARF numbers and the trampoline's values
static const int kRegs[6] = {3, 6, 12, 13, 14, 15};
static const char *const kRegNames[6] = {"rbx", "rbp", "r12", "r13", "r14", "r15"};
#define PATTERN(n) "0x5e5e5e5e0000000" #n
asm(R"(
	.text
	.globl	aesgen_step_call
	.globl	aesgen_step_call_begin
	.globl	aesgen_step_return
	.globl	aesgen_step_call_end
	.type	aesgen_step_call, @function
	.p2align	4
aesgen_step_call_begin:
aesgen_step_call:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset	16
	.cfi_offset	%rbp, -16
	pushq	%rbx
	.cfi_def_cfa_offset	24
	.cfi_offset	%rbx, -24
	pushq	%r12
	.cfi_def_cfa_offset	32
	.cfi_offset	%r12, -32
	pushq	%r13
	.cfi_def_cfa_offset	40
	.cfi_offset	%r13, -40
	pushq	%r14
	.cfi_def_cfa_offset	48
	.cfi_offset	%r14, -48
	pushq	%r15
	.cfi_def_cfa_offset	56
	.cfi_offset	%r15, -56
	subq	$40, %rsp
	.cfi_def_cfa_offset	96
	movq	%rdi, %rax
	movq	%rsi, %r11
	movq	48(%r11), %r10
	movq	%r10, 0(%rsp)
	movq	56(%r11), %r10
	movq	%r10, 8(%rsp)
	movq	64(%r11), %r10
	movq	%r10, 16(%rsp)
	movq	72(%r11), %r10
	movq	%r10, 24(%rsp)
	movabsq	$)" PATTERN(1) R"(, %rbx
	movabsq	$)" PATTERN(2) R"(, %rbp
	movabsq	$)" PATTERN(3) R"(, %r12
	movabsq	$)" PATTERN(4) R"(, %r13
	movabsq	$)" PATTERN(5) R"(, %r14
	movabsq	$)" PATTERN(6) R"(, %r15
	movq	%rsp, aesgen_step_rsp(%rip)
	movq	0(%r11), %rdi
	movq	8(%r11), %rsi
	movq	16(%r11), %rdx
	movq	24(%r11), %rcx
	movq	32(%r11), %r8
	movq	40(%r11), %r9
	pushfq
	orq	$0x100, (%rsp)
	popfq
	call	*%rax
aesgen_step_return:
	pushfq
	andq	$-257, (%rsp)
	popfq
	addq	$40, %rsp
	.cfi_def_cfa_offset	56
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	.cfi_def_cfa_offset	8
	ret
	.cfi_endproc
aesgen_step_call_end:
	.size	aesgen_step_call, .-aesgen_step_call

	.globl	aesgen_step_good
	.type	aesgen_step_good, @function
aesgen_step_good:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset	16
	.cfi_offset	%rbx, -16
	xorl	%ebx, %ebx
	popq	%rbx
	.cfi_def_cfa_offset	8
	.cfi_restore	%rbx
	ret
	.cfi_endproc
	.size	aesgen_step_good, .-aesgen_step_good

	# saves rbx but its CFI does not say where: unwinding gives the kernel's rbx (0)
	.globl	aesgen_step_bad_offset
	.type	aesgen_step_bad_offset, @function
aesgen_step_bad_offset:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset	16
	xorl	%ebx, %ebx
	popq	%rbx
	.cfi_def_cfa_offset	8
	ret
	.cfi_endproc
	.size	aesgen_step_bad_offset, .-aesgen_step_bad_offset

	# moves rsp without saying so: between the sub and the add the CFA is 8 bytes off
	.globl	aesgen_step_bad_cfa
	.type	aesgen_step_bad_cfa, @function
aesgen_step_bad_cfa:
	.cfi_startproc
	subq	$8, %rsp
	nop
	addq	$8, %rsp
	ret
	.cfi_endproc
	.size	aesgen_step_bad_cfa, .-aesgen_step_bad_cfa
)");

namespace {

using aesgen_harness::CpuFeatures;
using aesgen_harness::FeatureList;

// What the SIGTRAP handler found over one stepped call.
struct StepReport {
  uint64_t steps = 0;       // stops inside the callee
  uint64_t bad = 0;         // stops where the unwind went wrong
  std::string first;        // the first of those, explained
};

StepReport *g_report = nullptr;
const void *g_entry = nullptr;

struct Walk {
  uintptr_t rip;
  bool past_interrupted = false;   // the interrupted frame was seen
  int frames = 0;                  // frames after it
  uintptr_t caller_sp = 0;         // the trampoline frame's stack pointer, as unwound
  bool reached = false;
  uint64_t regs[6] = {};
};

_Unwind_Reason_Code Trace(struct _Unwind_Context *ctx, void *arg) {
  Walk *w = static_cast<Walk *>(arg);
  uintptr_t ip = _Unwind_GetIP(ctx);
  if (!w->past_interrupted) {
    if (ip == w->rip) w->past_interrupted = true;
    return w->frames++ > 16 ? _URC_END_OF_STACK : _URC_NO_REASON;
  }
  if (ip == reinterpret_cast<uintptr_t>(aesgen_step_return)) {
    w->reached = true;
    // (libgcc: in the callback of a frame, the CFA of the frame it called, which is this
    // frame's stack pointer)
    w->caller_sp = _Unwind_GetCFA(ctx);
    for (int i = 0; i < 6; i++) w->regs[i] = _Unwind_GetGR(ctx, kRegs[i]);
    return _URC_END_OF_STACK;
  }
  if (++w->frames > 4) return _URC_END_OF_STACK;     // a kernel nests at most 2 deep
  return _URC_NO_REASON;
}

void OnTrap(int, siginfo_t *, void *uc_void) {
  ucontext_t *uc = static_cast<ucontext_t *>(uc_void);
  uintptr_t rip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (g_report == nullptr || (rip >= reinterpret_cast<uintptr_t>(aesgen_step_call_begin) &&
                              rip < reinterpret_cast<uintptr_t>(aesgen_step_call_end))) {
    return;                                        // the trampoline's own instructions
  }
  g_report->steps++;
  Walk w;
  w.rip = rip;
  _Unwind_Backtrace(Trace, &w);
  std::ostringstream why;
  if (!w.past_interrupted) {
    why << "the unwinder did not find the interrupted frame";
  } else if (!w.reached) {
    why << "the walk did not reach the caller (" << w.frames << " frames)";
  } else if (w.caller_sp != aesgen_step_rsp) {
    why << "the caller's stack pointer unwinds to rsp" << std::showpos
        << static_cast<long>(w.caller_sp - aesgen_step_rsp);
  } else {
    for (int i = 0; i < 6; i++) {
      uint64_t want = 0x5e5e5e5e00000001ull + static_cast<uint64_t>(i);
      if (w.regs[i] != want) {
        why << kRegNames[i] << " unwinds to " << std::hex << w.regs[i] << ", not " << want;
        break;
      }
    }
  }
  if (!why.str().empty() && g_report->bad++ == 0) {
    std::ostringstream first;
    first << "at entry+" << std::hex << "0x"
          << static_cast<long>(rip - reinterpret_cast<uintptr_t>(g_entry)) << std::dec
          << " (step " << g_report->steps << "): " << why.str();
    g_report->first = first.str();
  }
}

// fn(args...) single-stepped, checked at every instruction.
StepReport Stepped(const void *fn, std::vector<uint64_t> args) {
  args.resize(10, 0);
  struct sigaction sa, old;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnTrap;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTRAP, &sa, &old);
  StepReport report;
  g_report = &report;
  g_entry = fn;
  aesgen_step_call(fn, args.data());
  g_report = nullptr;
  sigaction(SIGTRAP, &old, nullptr);
  return report;
}

#define U(x) static_cast<uint64_t>(reinterpret_cast<uintptr_t>(x))

void Expect(const char *kernel, const char *entry, const StepReport &r) {
  EXPECT_GT(r.steps, 1u) << kernel << " " << entry << ": no instruction was stepped";
  EXPECT_EQ(r.bad, 0u) << kernel << " " << entry << ": " << r.bad << " of " << r.steps
                       << " instructions unwind wrongly; the first " << r.first;
}

std::string Named(const char *n, size_t i) {
  std::string s = (n && *n) ? n : "kernel_" + std::to_string(i);
  for (char &c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

struct Buffers {
  std::vector<uint8_t> key = std::vector<uint8_t>(32, 0x2b), iv = std::vector<uint8_t>(16, 0x5c);
  std::vector<uint8_t> in = std::vector<uint8_t>(700, 0x11), out = std::vector<uint8_t>(700);
  std::vector<uint8_t> aad = std::vector<uint8_t>(40, 0x21), tag = std::vector<uint8_t>(16);
  void *ctx = nullptr;
  explicit Buffers(size_t ctx_size) : ctx(std::aligned_alloc(64, (ctx_size + 63) & ~size_t{63})) {}
  ~Buffers() { std::free(ctx); }
};

size_t FirstKeyBytes() {
  for (int i = 0; i < 3; i++)
    if (aesgen_key_bits_supported & (1u << i)) return 16 + 8 * static_cast<size_t>(i);
  return 16;
}

class UnwindKernel : public ::testing::TestWithParam<size_t> {};

TEST_P(UnwindKernel, EveryInstructionOfEveryEntryUnwinds) {
  const aesgen_kernel &k = aesgen_kernels[GetParam()];
  uint64_t missing = k.features & ~CpuFeatures();
  if (missing) GTEST_SKIP() << k.name << " needs " << FeatureList(missing) << " which this CPU lacks";
  Buffers b(k.ctx_size);
  size_t kb = FirstKeyBytes();
  Expect(k.name, "init", Stepped(reinterpret_cast<const void *>(k.init),
                                 {U(b.ctx), U(b.key.data()), kb, U(b.iv.data())}));
  Expect(k.name, "set_iv", Stepped(reinterpret_cast<const void *>(k.set_iv),
                                   {U(b.ctx), U(b.iv.data())}));
  // past a batch of every width (16 blocks in 4 zmm), then a tail and a partial block
  for (size_t len : {size_t{300}, size_t{37}}) {
    Expect(k.name, "xor_stream", Stepped(reinterpret_cast<const void *>(k.xor_stream),
                                         {U(b.ctx), U(b.out.data()), U(b.in.data()), len}));
  }
  Expect(k.name, "wipe", Stepped(reinterpret_cast<const void *>(k.wipe), {U(b.ctx)}));
}

INSTANTIATE_TEST_SUITE_P(Kernels, UnwindKernel, ::testing::Range<size_t>(0, aesgen_kernel_count),
                         [](const ::testing::TestParamInfo<size_t> &i) {
                           return Named(aesgen_kernels[i.param].name, i.param);
                         });

#ifdef AESGEN_HAVE_AEAD
class UnwindAead : public ::testing::TestWithParam<size_t> {};

TEST_P(UnwindAead, EveryInstructionOfEveryEntryUnwinds) {
  const aesgen_aead &a = aesgen_aeads[GetParam()];
  uint64_t missing = a.features & ~CpuFeatures();
  if (missing) GTEST_SKIP() << a.name << " needs " << FeatureList(missing) << " which this CPU lacks";
  Buffers b(a.ctx_size);
  size_t kb = FirstKeyBytes();
  if (a.init(b.ctx, b.key.data(), kb) != 0) kb = 32;       // GCM-SIV: 16 or 32 bytes
  Expect(a.name, "init", Stepped(reinterpret_cast<const void *>(a.init),
                                 {U(b.ctx), U(b.key.data()), kb}));
  const size_t len = 300, nonce = 12, tag = a.tag_max;
  Expect(a.name, "seal", Stepped(reinterpret_cast<const void *>(a.seal),
                                 {U(b.ctx), U(b.iv.data()), nonce, U(b.aad.data()), 40,
                                  U(b.in.data()), len, U(b.out.data()), U(b.tag.data()), tag}));
  Expect(a.name, "open", Stepped(reinterpret_cast<const void *>(a.open),
                                 {U(b.ctx), U(b.iv.data()), nonce, U(b.aad.data()), 40,
                                  U(b.out.data()), len, U(b.in.data()), U(b.tag.data()), tag}));
  if (a.start != nullptr) {
    Expect(a.name, "start", Stepped(reinterpret_cast<const void *>(a.start),
                                    {U(b.ctx), U(b.iv.data()), nonce}));
    Expect(a.name, "aad", Stepped(reinterpret_cast<const void *>(a.aad),
                                  {U(b.ctx), U(b.aad.data()), 21}));
    Expect(a.name, "encrypt", Stepped(reinterpret_cast<const void *>(a.encrypt),
                                      {U(b.ctx), U(b.in.data()), 333, U(b.out.data())}));
    Expect(a.name, "finish_seal", Stepped(reinterpret_cast<const void *>(a.finish_seal),
                                          {U(b.ctx), U(b.tag.data()), tag}));
    a.start(b.ctx, b.iv.data(), nonce);
    Expect(a.name, "decrypt", Stepped(reinterpret_cast<const void *>(a.decrypt),
                                      {U(b.ctx), U(b.out.data()), 333, U(b.in.data())}));
    Expect(a.name, "finish_open", Stepped(reinterpret_cast<const void *>(a.finish_open),
                                          {U(b.ctx), U(b.tag.data()), tag}));
  }
  Expect(a.name, "wipe", Stepped(reinterpret_cast<const void *>(a.wipe), {U(b.ctx)}));
}

INSTANTIATE_TEST_SUITE_P(Aeads, UnwindAead, ::testing::Range<size_t>(0, aesgen_aead_count),
                         [](const ::testing::TestParamInfo<size_t> &i) {
                           return Named(aesgen_aeads[i.param].name, i.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UnwindAead);
#endif

// The check itself: right CFI passes at every instruction; a save it does not describe and
// a stack move it does not describe are both caught, at the instructions they affect.
TEST(UnwindCheck, FindsWrongUnwindInformation) {
  StepReport good = Stepped(reinterpret_cast<const void *>(aesgen_step_good), {});
  EXPECT_EQ(good.steps, 4u);
  EXPECT_EQ(good.bad, 0u) << good.first;
  StepReport offset = Stepped(reinterpret_cast<const void *>(aesgen_step_bad_offset), {});
  EXPECT_EQ(offset.bad, 1u) << "only after xor %ebx (rbx cleared, its save undescribed)";
  EXPECT_NE(offset.first.find("rbx unwinds to 0"), std::string::npos) << offset.first;
  StepReport cfa = Stepped(reinterpret_cast<const void *>(aesgen_step_bad_cfa), {});
  EXPECT_EQ(cfa.bad, 2u) << "at the nop and the add, rsp is 8 lower than the CFI says";
  EXPECT_NE(cfa.first.find("did not reach the caller"), std::string::npos) << cfa.first;
}

}  // namespace

#endif  // __x86_64__
