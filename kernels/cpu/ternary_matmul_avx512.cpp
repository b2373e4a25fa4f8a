// The AVX-512 VNNI family of the ternary product and of activation quantization. Compiled with
// AVX-512 F/BW/VL/VNNI flags (kernels/CMakeLists.txt); only reached when CPUID reports them.
//
// Weight layout: the shared 64-row tiles (simd_tile_rows, kernels/cpu/isa_kernels.hpp, the same
// bytes the AVX2 family reads): for each step s of 4 columns, a 64-byte chunk whose byte j holds,
// at bits 2v+1..2v, the code of row 16v + j/4 and column 4s + j%4. One
// chunk therefore unpacks, with a shift and a mask, into four registers of 16 rows × 4 columns of
// u8 codes: exactly the u8 operand of vpdpbusd, whose s8 operand is a token's 4 activations at
// 4s..4s+3 broadcast to all 16 lanes. The 32-bit lanes of the accumulators are rows, so the
// epilogue stores 16 consecutive outputs of a token at once, and every unpacked register feeds
// up to `max_tokens` tokens before the next chunk is loaded.
#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstring>

namespace bitnet::kernels::cpu {
namespace {

constexpr std::uint32_t tile = simd_tile_rows;
// Tokens per register tile: 4 row registers × 6 tokens = 24 accumulators (see tile_tokens).
constexpr std::size_t max_tokens = 6;

// An empty asm that claims to read and write `v` in a vector register: GCC must keep the
// accumulator in a register at this point, which stops it from rotating the accumulators through
// register copies (or the stack) from one step to the next (seen in the object code).
inline __m512i pinned(__m512i v) {
    asm("" : "+v"(v));
    return v;
}

inline __m512i broadcast4(const std::int8_t* p) {
    std::int32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

// (dot − Σq) / act_scale · w_scale for 16 rows of one token, the scalar epilogue's operations in
// the same order, so the floats agree bit for bit.
inline void store_rows(__m512i dot, const ternary_args& a, std::size_t t, std::uint32_t row0) {
    if (row0 >= a.row_end)
        return;
    const __m512i centred = _mm512_sub_epi32(dot, _mm512_set1_epi32(a.act_sum[t]));
    __m512 v = _mm512_cvtepi32_ps(centred);
    v = _mm512_div_ps(v, _mm512_set1_ps(a.act_scale[t]));
    v = _mm512_mul_ps(v, _mm512_set1_ps(a.w_scale));
    float* out = a.y + t * a.ldy + row0;
    const std::uint32_t valid = a.row_end - row0;
    if (valid >= 16)
        _mm512_storeu_ps(out, v);
    else
        _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << valid) - 1u), v);
}

// Decode: one token against one 64-row tile. One token gives only four dependent chains per
// chunk, too few to cover vpdpbusd's latency, so two accumulator sets alternate over even and odd
// steps. The prefetch 2 KiB ahead (the next tile follows this one) cut the CPU time of a
// memory-bound 30-layer decode by about a sixth.
void decode_tile(const std::uint8_t* w_tile, const ternary_args& a, std::size_t t0,
                 std::uint32_t row0) {
    const __m512i mask = _mm512_set1_epi8(3);
    const std::size_t steps = a.k / 4;
    const std::int8_t* q = a.q + t0 * a.k;
    __m512i even[4];
    __m512i odd[4];
    for (int v = 0; v < 4; ++v) {
        even[v] = _mm512_setzero_si512();
        odd[v] = _mm512_setzero_si512();
    }
    for (std::size_t s = 0; s < steps; s += 2) {
        _mm_prefetch(reinterpret_cast<const char*>(w_tile + s * 64 + 2048), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(w_tile + s * 64 + 2048 + 64), _MM_HINT_T0);
        const __m512i b0 = _mm512_load_si512(w_tile + s * 64);
        const __m512i b1 = _mm512_load_si512(w_tile + s * 64 + 64);
        const __m512i x0 = broadcast4(q + 4 * s);
        const __m512i x1 = broadcast4(q + 4 * s + 4);
        for (int v = 0; v < 4; ++v) {
            const __m512i w0 = _mm512_and_si512(_mm512_srli_epi16(b0, 2 * v), mask);
            const __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(b1, 2 * v), mask);
            even[v] = _mm512_dpbusd_epi32(even[v], w0, x0);
            odd[v] = _mm512_dpbusd_epi32(odd[v], w1, x1);
        }
    }
    for (std::uint32_t v = 0; v < 4; ++v)
        store_rows(_mm512_add_epi32(even[v], odd[v]), a, t0, row0 + 16 * v);
}

// Tokens [t0, t0 + T) against one 64-row tile, straight from its packed bytes: each 64-byte
// chunk is unpacked (three shifts, four masks) into the four row registers, which then feed
// 4 × T vpdpbusd. At T = 6 that is 24 accumulators, 4 code registers, the mask and a broadcast:
// 30 of the 32 zmm. The accumulators are four named arrays, not one acc[4][T], and every update
// goes through pinned(): with a 4 × 6 array GCC 12 kept the accumulators on the stack, and
// with 2 × 6 it still rotated them through register copies each step (object code,
// bench/RESULTS.md). Reading the packed tile (16 · k bytes, 40 KiB at k = 2560) instead of a tile
// unpacked to a byte per code (64 · k bytes, which lived in L2 and had to be written first) was
// faster at every token count measured: the shifts and masks run beside vpdpbusd.
template <std::size_t T>
void tile_tokens(const std::uint8_t* w_tile, const ternary_args& a, std::size_t t0,
                 std::uint32_t row0) {
    const __m512i mask = _mm512_set1_epi8(3);
    const std::size_t steps = a.k / 4;
    const std::int8_t* q[T];
    for (std::size_t t = 0; t < T; ++t)
        q[t] = a.q + (t0 + t) * a.k;
    __m512i r0[T];
    __m512i r1[T];
    __m512i r2[T];
    __m512i r3[T];
    for (std::size_t t = 0; t < T; ++t) {
        r0[t] = _mm512_setzero_si512();
        r1[t] = _mm512_setzero_si512();
        r2[t] = _mm512_setzero_si512();
        r3[t] = _mm512_setzero_si512();
    }
    for (std::size_t s = 0; s < steps; ++s) {
        const __m512i b = _mm512_load_si512(w_tile + s * 64);
        const __m512i w0 = _mm512_and_si512(b, mask);
        const __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(b, 2), mask);
        const __m512i w2 = _mm512_and_si512(_mm512_srli_epi16(b, 4), mask);
        const __m512i w3 = _mm512_and_si512(_mm512_srli_epi16(b, 6), mask);
        for (std::size_t t = 0; t < T; ++t) {
            const __m512i x = broadcast4(q[t] + 4 * s);
            r0[t] = pinned(_mm512_dpbusd_epi32(r0[t], w0, x));
            r1[t] = pinned(_mm512_dpbusd_epi32(r1[t], w1, x));
            r2[t] = pinned(_mm512_dpbusd_epi32(r2[t], w2, x));
            r3[t] = pinned(_mm512_dpbusd_epi32(r3[t], w3, x));
        }
    }
    for (std::size_t t = 0; t < T; ++t) {
        store_rows(r0[t], a, t0 + t, row0);
        store_rows(r1[t], a, t0 + t, row0 + 16);
        store_rows(r2[t], a, t0 + t, row0 + 32);
        store_rows(r3[t], a, t0 + t, row0 + 48);
    }
}

using tile_fn = void (*)(const std::uint8_t*, const ternary_args&, std::size_t, std::uint32_t);
constexpr tile_fn tile_fns[max_tokens + 1] = {nullptr,        decode_tile,    tile_tokens<2>,
                                              tile_tokens<3>, tile_tokens<4>, tile_tokens<5>,
                                              tile_tokens<6>};

} // namespace

void ternary_rows_avx512(const ternary_args& a) {
    const std::size_t tile_bytes = static_cast<std::size_t>(tile) * a.k / 4;
    // Tokens are taken in blocks whose activations (96 · k bytes, 240 KiB at k = 2560) stay in L2
    // while every tile of the range is read once per block (from L2 or memory), and each tile
    // stays in L1/L2 while the block's token groups read it.
    constexpr std::size_t token_block = 16 * max_tokens;
    for (std::size_t b0 = 0; b0 < a.n_tok; b0 += token_block) {
        const std::size_t b1 = b0 + token_block < a.n_tok ? b0 + token_block : a.n_tok;
        for (std::uint32_t row0 = a.row_begin; row0 < a.row_end; row0 += tile) {
            const std::uint8_t* w_tile = a.w + static_cast<std::size_t>(row0 / tile) * tile_bytes;
            std::size_t t0 = b0;
            for (; t0 + max_tokens <= b1; t0 += max_tokens)
                tile_fns[max_tokens](w_tile, a, t0, row0);
            if (t0 < b1)
                tile_fns[b1 - t0](w_tile, a, t0, row0);
        }
    }
}

void quantize_row_avx512(const quantize_args& a) {
    const std::size_t n16 = a.k / 16 * 16;
    __m512 vmax = _mm512_setzero_ps();
    for (std::size_t i = 0; i < n16; i += 16)
        vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(a.x + i)));
    float max_abs = _mm512_reduce_max_ps(vmax);
    for (std::size_t i = n16; i < a.k; ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, a.x + i, sizeof bits);
        bits &= 0x7fffffffu;
        float v = 0.0f;
        std::memcpy(&v, &bits, sizeof v);
        max_abs = v > max_abs ? v : max_abs;
    }
    // The max of |x| is exact in float; the floor and the division are in double as in ggml.
    const double max = static_cast<double>(max_abs) > 1e-5 ? static_cast<double>(max_abs) : 1e-5;
    const auto s = static_cast<float>(127.0 / max);
    const __m512 vs = _mm512_set1_ps(s);
    const __m512 lo = _mm512_set1_ps(-128.0f);
    const __m512 hi = _mm512_set1_ps(127.0f);
    __m512i vsum = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n16; i += 16) {
        __m512 r = _mm512_mul_ps(_mm512_loadu_ps(a.x + i), vs);
        r = _mm512_roundscale_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        const __m512i qi = _mm512_cvtps_epi32(r);
        vsum = _mm512_add_epi32(vsum, qi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(a.q + i), _mm512_cvtepi32_epi8(qi));
    }
    std::int32_t total = _mm512_reduce_add_epi32(vsum);
    for (std::size_t i = n16; i < a.k; ++i) {
        __m128 r = _mm_mul_ss(_mm_set_ss(a.x[i]), _mm_set_ss(s));
        r = _mm_round_ss(r, r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm_min_ss(_mm_max_ss(r, _mm_set_ss(-128.0f)), _mm_set_ss(127.0f));
        const auto v = static_cast<std::int8_t>(_mm_cvtss_si32(r));
        a.q[i] = v;
        total += v;
    }
    *a.scale = s;
    *a.sum = total;
}

} // namespace bitnet::kernels::cpu
