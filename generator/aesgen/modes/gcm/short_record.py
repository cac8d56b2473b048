"""The one-shot path of short GCM records on x86-64: seal and open of at most SHORT_BYTES
bytes under a 12-byte nonce with at most 16 bytes of AAD (a TLS 1.2 record header is 13
bytes, TLS 1.3's 5).

For such a record the whole computation is one AES batch and one sum of products:
  - J0 = nonce || 00000001 and the counter blocks nonce || 0000000(1 + i) are built in
    registers (a 12-byte nonce's counter cannot carry out of byte 15 within SHORT_BLOCKS
    blocks), and E_K(J0) and the keystream are one batch of 1 + SHORT_BLOCKS blocks;
  - GHASH(A, C) = A H^(n+2) ^ C_1 H^(n+1) ^ .. ^ C_n H^2 ^ L H (n message blocks, A the AAD
    block, L the length block), with one reduction; the powers of H are indexed from a
    pointer set by the (public) length, so the terms of A and L, which need no AES, are
    multiplied while the batch runs;
  - a partial block is read into a register through a 16-byte bounce field of the context
    (short_bytes.short_move: no byte loop, nothing read outside the caller's buffer) and
    masked there, so no value the tag depends on waits on a store to be forwarded; with
    AVX-512 (the zmm kernel) by one byte-masked load instead, and written by a masked
    store.
Nothing is left in the context for streaming calls: seal and open are one-shot.
"""
from __future__ import annotations

from ...arch.x86_64.scalar import load_bytes
from ...arch.x86_64.short_bytes import short_move
from ...dsl.operands import Imm, Mem, Reg, kmask

SHORT_BLOCKS = 4
SHORT_BYTES = 16 * SHORT_BLOCKS
MASKS = b"\xff" * 16 + b"\x00" * 16     # 16 bytes from MASKS + 16 - n: n bytes of 0xff


def takes_short_path(g, nonce_len: Reg, aad_len: Reg, length: Reg, general, record) -> None:
    """Fall through when the record fits the short path; else jump to ``record`` when the
    nonce and AAD fit it (a TLS record longer than SHORT_BYTES: x86_64.Body.start_record),
    or to ``general``."""
    a = g.a
    a.cmp(nonce_len, Imm(12))
    a.jne(general)
    a.cmp(aad_len, Imm(16))
    a.ja(general)
    a.cmp(length, Imm(SHORT_BYTES))
    a.ja(record)


def nonce_block(g, nonce: Reg) -> Reg:
    """A register holding the 12-byte nonce at ptr, then four zero bytes, read a byte at a
    time (load_bytes: a TLS stack writes each record's nonce just before the call) and
    nothing past the nonce."""
    b, v = g.b, g.v
    base, hi = b.xmm(), b.xmm()
    v.from_gp64(base, load_bytes(b, nonce, 0, 8, big_endian=False))
    v.from_gp64(hi, load_bytes(b, nonce, 8, 4, big_endian=False))
    v.unpack_low_qwords(base, base, hi)
    return base


def counter_block(g, base: Reg, i: int, dst: Reg | None = None) -> Reg:
    """nonce || [i]32 from nonce_block's register (i < 256), into dst or a new register."""
    x = dst or g.b.xmm()
    g.v.or_(x, base, g.b.const(f"short_counter{i}", bytes(15) + bytes([i])))
    return x


def _mask(g, n: Reg) -> Mem:
    """The 16-byte mask keeping the first n (0..16) bytes."""
    t = g.b.gp()
    g.a.lea(t, g.b.const("short_masks", MASKS).at(64))
    g.a.sub(t, n)
    return Mem(128, base=t, disp=16)


def load_short(g, dst: Reg, ptr: Reg, n: Reg, bounce: str, *, largest: int = 8) -> None:
    """dst = the n bytes at ptr, zero after them (n < 2 * largest). With AVX-512 one
    byte-masked load (nothing past the n bytes is read); else through the bounce field."""
    if g.v.evex:
        k = kmask(1)
        g.v.first_bytes_mask(k, n)
        g.v.load_masked(dst, Mem(128, base=ptr), k)
        return
    src, via = g.b.gp(), g.addr(bounce)
    g.a.mov(src, ptr)
    short_move(g.b, n, src=src, dst=via, largest=largest)
    g.v.load(dst, g.f(bounce))
    g.v.and_(dst, dst, _mask(g, n), unaligned=True)


def store_short(g, ptr: Reg, n: Reg, src: Reg, bounce: str) -> None:
    """The first n bytes of src to ptr (n < 16): with AVX-512 one byte-masked store; else
    the bounce field is written whole, and the pieces read back from it lie inside that
    one store."""
    if g.v.evex:
        k = kmask(1)
        g.v.first_bytes_mask(k, n)
        g.v.store_masked(Mem(128, base=ptr), src, k)
        return
    g.v.store(g.f(bounce), src)
    dst = g.b.gp()
    g.a.mov(dst, ptr)
    short_move(g.b, n, src=g.addr(bounce), dst=dst)


def short_record(g, nonce: Reg, aad: Reg, aad_len: Reg, inp: Reg, length: Reg, out: Reg,
                 *, decrypt: bool) -> Reg:
    """Encrypt (or decrypt) the record into out and return the full tag in a register.
    The caller checked the key, the lengths (takes_short_path) and the tag length."""
    a, b, v, h = g.a, g.b, g.v, g.hash
    k = g.k

    def keystream() -> list[Reg]:
        # J0 and the counter blocks: nonce || i + 1, big-endian in bytes 12..15
        with b.phase("counter"):
            base = nonce_block(g, nonce)
            blocks = [counter_block(g, base, i + 1) for i in range(1 + SHORT_BLOCKS)]
        g.per_key_size("short", lambda bits: g.aes(blocks, bits), b.label("short_keystream"))
        return blocks

    with b.region("short-record"):
        # an engine whose rounds take every register (the bit-sliced one) runs them before
        # the hash has values in registers; the others beside the AAD's and length's terms
        early = keystream() if k.engine.grouped_batches else None
        # L H: [len(A)]64 || [len(C)]64 in hash order, times H^1
        with b.phase("ghash_multiply"):
            acc = g.mul_power(g.length_block(aad_len, length), 1, None)
            # pw: the address of H^(n+2), n = ceil(len / 16); C_j takes H^(n+2-j) at pw + 16 j
            pw = b.gp()
            a.lea(pw, Mem(64, base=length, disp=15))
            b.emit("and", pw, Imm(-16))
            a.neg(pw)
            a.lea(pw, Mem(64, base=g.ctx, index=pw,
                          disp=k.layout.offset("H_POWERS") + 16 * (k.table_powers - 2)))
        with b.phase("load_store"):
            blk = b.xmm()
            load_short(g, blk, aad, aad_len, "PENDING", largest=16)
        with b.phase("ghash_multiply"):
            v.shuffle_bytes(blk, blk, h.bswap_mask())
            acc = g.mul_power_at(blk, Mem(128, base=pw), acc)
        blocks = early or keystream()
        ej0 = blocks[0]
        hashed, partial = b.label("short_hashed"), b.label("short_partial")
        last_ks = b.xmm()                          # the keystream of a partial last block
        for j, ks in enumerate(blocks[1:], start=1):
            with b.phase("loop"):
                a.cmp(length, Imm(16 * (j - 1)))
                a.jbe(hashed)
                a.cmp(length, Imm(16 * j))
                whole = b.label(f"short_whole{j}")
                a.jae(whole)
                v.copy(last_ks, ks)
                a.jmp(partial)
                b.bind(whole)
            with b.phase("load_store"):
                c = b.xmm()
                v.load(c, Mem(128, base=inp, disp=16 * (j - 1)), aligned=False)
                y = b.xmm()
                if decrypt:
                    v.xor(y, c, ks)
                    v.store(Mem(128, base=out, disp=16 * (j - 1)), y, aligned=False)
                else:
                    v.xor(c, c, ks)
                    v.store(Mem(128, base=out, disp=16 * (j - 1)), c, aligned=False)
            with b.phase("ghash_multiply"):
                v.shuffle_bytes(c, c, h.bswap_mask())
                acc = g.mul_power_at(c, Mem(128, base=pw, disp=16 * j), acc)
        b.bind(hashed)
        with b.phase("reduction"):
            x = h.reduce(acc)
        tag = b.xmm()
        v.shuffle_bytes(tag, x, h.bswap_mask())
        v.xor(tag, tag, ej0)
        done = b.label("short_done")
        a.jmp(done)
        # out of line, once: the partial block ending the record, at len & -16, the last
        # message block, so its power is H^2 (pw + 16 n)
        with b.region("short-record-tail"), b.phase("tail"):
            b.bind(partial)
            rem, src, dst, at = b.gp(), b.gp(), b.gp(), b.gp()
            a.mov(rem, length)
            b.emit("and", rem, Imm(15))
            a.mov(at, length)
            b.emit("and", at, Imm(-16))
            a.lea(src, Mem(64, base=inp, index=at))
            a.lea(dst, Mem(64, base=out, index=at))
            c = b.xmm()
            load_short(g, c, src, rem, "SCRATCH")
            y = b.xmm()
            v.xor(y, c, last_ks)
            if not decrypt:                         # the ciphertext, zero past the record
                if v.evex:
                    v.keep_masked(y, y, kmask(1))   # the mask load_short just set
                else:
                    v.and_(y, y, _mask(g, rem), unaligned=True)
                v.copy(c, y)
            store_short(g, dst, rem, y, "SCRATCH")
            v.shuffle_bytes(c, c, h.bswap_mask())
            a.lea(at, Mem(64, base=pw, index=at, disp=16))
            acc = g.mul_power_at(c, Mem(128, base=at), acc)
            a.jmp(hashed)
        b.bind(done)
    return tag
