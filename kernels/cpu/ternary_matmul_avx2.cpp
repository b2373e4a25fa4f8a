// The AVX2 family of the ternary product and of activation quantization. Compiled with AVX2, FMA
// and F16C flags (kernels/CMakeLists.txt); only reached when CPUID reports them.
//
// Weight layout: the shared 64-row tiles (simd_tile_rows, kernels/cpu/isa_kernels.hpp), the same
// bytes the AVX-512 family reads. For each step s of 4 columns the 64-byte chunk is read as two
// 32-byte halves h; byte j of half h holds at bits 2v+1..2v the code of row 16v + 8h + j/4, so a
// shift and a mask turn half h into register r = 2v + h: rows 8r..8r+7 × 4 columns of u8 codes.
// vpmaddubsw against a token's 4 activations (broadcast) gives per row two int16 sums of two
// products each, which are accumulated in int16 and widened to int32 every 32 steps. Codes are at
// most 2 (pack maps code 3 to 1), so a pair sum lies in [−512, 508] and 32 of them cannot leave
// int16: the integer result is exact, as the scalar twin's int32 sum.
#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstring>

namespace bitnet::kernels::cpu {
namespace {

constexpr std::uint32_t tile = simd_tile_rows;
constexpr std::size_t regs_per_tile = tile / 8; // 8 rows of int32 lanes per ymm
// Tokens a group of the unpacked loop takes (two_token_step).
constexpr std::size_t unpacked_group = 2;
// Up to this many tokens (a step verifying up to 7 speculative drafts) the token groups unpack
// each chunk in registers as they read it; more share a tile unpacked once into scratch.
// Unpacking first costs a pass over the tile: measured in one process, alternating call by call
// (Zen 3, 1 thread), groups of 4 and 3 unpacking in registers ran 1.05–1.30 times as fast as the
// unpacked loop at 6 to 8 tokens and 0.98–1.19 at 9 to 12.
constexpr std::size_t unpack_in_registers_up_to = 8;
constexpr std::size_t steps_per_widen = 32; // 32 × 512 < 2^15, see above
// Steps of an unpacked pass that the token groups share from L1: 128 steps are 16 KiB of codes.
constexpr std::size_t steps_per_l1_block = 4 * steps_per_widen;

inline __m256i broadcast4(const std::int8_t* p) {
    std::int32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

// An empty asm that claims to read and write `v` in a ymm register: GCC must then keep the value
// in a register at this point and cannot hoist the next register's unpack above it, so a pass
// works through its code registers one at a time instead of unpacking all of them first and
// spilling accumulators.
inline __m256i pinned(__m256i v) {
    asm("" : "+x"(v));
    return v;
}

// acc += vpmaddubsw(w, x), int16 lanes, as one asm statement that updates `acc` in place. Written
// with intrinsics (and `pinned` on the sum), GCC 12 computed each sum in a new register and copied
// it back: a vmovdqa for every vpmaddubsw, which with the unpacking's shifts and masks made the
// loop bound by vector instruction slots at about 0.6 of the same loop without the copies.
inline void maddubs_acc(__m256i& acc, __m256i w, __m256i x) {
    __m256i product;
    asm("vpmaddubsw %[x], %[w], %[p]\n\t"
        "vpaddw %[p], %[acc], %[acc]"
        : [acc] "+x"(acc), [p] "=&x"(product)
        : [w] "x"(w), [x] "x"(x));
}

// Register r = 2v + h of a step's chunk (rows 8r..8r+7): half h shifted by 2v and masked.
inline __m256i unpack_reg(const std::uint8_t* chunk, std::size_t r, __m256i mask) {
    const __m256i half = _mm256_load_si256(reinterpret_cast<const __m256i*>(chunk + 32 * (r % 2)));
    return _mm256_and_si256(_mm256_srli_epi16(half, static_cast<int>(2 * (r / 2))), mask);
}

inline void store_rows(__m256i dot, const ternary_args& a, std::size_t t, std::uint32_t row0) {
    if (row0 >= a.row_end)
        return;
    const __m256i centred = _mm256_sub_epi32(dot, _mm256_set1_epi32(a.act_sum[t]));
    __m256 v = _mm256_cvtepi32_ps(centred);
    v = _mm256_div_ps(v, _mm256_set1_ps(a.act_scale[t]));
    v = _mm256_mul_ps(v, _mm256_set1_ps(a.w_scale));
    float* out = a.y + t * a.ldy + row0;
    const std::uint32_t valid = a.row_end - row0;
    if (valid >= 8) {
        _mm256_storeu_ps(out, v);
        return;
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane);
    _mm256_maskstore_ps(out, keep, v);
}

constexpr int both_halves = -1;

// One pass over a 64-row tile for tokens [t0, t0 + T): the code registers r = 2v + h of half
// `Half` (or of both halves), v = V0 .. V0 + NV − 1, each chunk unpacked as it is loaded (a half
// is loaded once and shifted on from plane to plane). T · R accumulators, T broadcasts, the half,
// the unpacked register, the product and the mask must fit the 16 ymm registers: 1 token × 8
// registers, 2 × 4, or 3 and 4 tokens × 2.
template <std::size_t T, int Half, std::size_t V0, std::size_t NV>
void tile_pass(const std::uint8_t* w_tile, const ternary_args& a, std::size_t t0,
               std::uint32_t row0) {
    constexpr std::size_t n_halves = Half == both_halves ? 2 : 1;
    constexpr std::size_t R = n_halves * NV;
    constexpr std::size_t first_half = Half == both_halves ? 0 : static_cast<std::size_t>(Half);
    static_assert(T * R + T + 4 <= 16, "the pass would spill its accumulators");
    // Rows 8 · (2 · V0 + first_half) up are this pass's; none of them may be in the range.
    if (row0 + 8 * (2 * V0 + first_half) >= a.row_end)
        return;
    const __m256i mask = _mm256_set1_epi8(3);
    const __m256i ones = _mm256_set1_epi16(1);
    const std::size_t steps = a.k / 4; // a multiple of 32 since k % 128 == 0
    const std::int8_t* q[T];
    for (std::size_t t = 0; t < T; ++t)
        q[t] = a.q + (t0 + t) * a.k;
    __m256i acc32[R][T];
    for (auto& row : acc32)
        for (auto& v : row)
            v = _mm256_setzero_si256();
    for (std::size_t s0 = 0; s0 < steps; s0 += steps_per_widen) {
        __m256i acc16[R][T];
        for (auto& row : acc16)
            for (auto& v : row)
                v = _mm256_setzero_si256();
        for (std::size_t s = s0; s < s0 + steps_per_widen; ++s) {
            const std::uint8_t* chunk = w_tile + s * 64;
            // Decode streams the weights from memory: fetch 2 KiB ahead (the next tile follows).
            if constexpr (T == 1)
                _mm_prefetch(reinterpret_cast<const char*>(chunk + 2048), _MM_HINT_T0);
            __m256i x[T];
            for (std::size_t t = 0; t < T; ++t)
                x[t] = broadcast4(q[t] + 4 * s);
            for (std::size_t i = 0; i < n_halves; ++i) {
                __m256i half = _mm256_load_si256(
                    reinterpret_cast<const __m256i*>(chunk + 32 * (first_half + i)));
                if constexpr (V0 > 0)
                    half = _mm256_srli_epi16(half, static_cast<int>(2 * V0));
                for (std::size_t j = 0; j < NV; ++j) {
                    if (j > 0)
                        half = pinned(_mm256_srli_epi16(half, 2));
                    const __m256i w = _mm256_and_si256(half, mask);
                    for (std::size_t t = 0; t < T; ++t)
                        maddubs_acc(acc16[i * NV + j][t], w, x[t]);
                }
            }
        }
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t t = 0; t < T; ++t)
                acc32[r][t] = _mm256_add_epi32(acc32[r][t], _mm256_madd_epi16(acc16[r][t], ones));
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < n_halves; ++i)
            for (std::size_t j = 0; j < NV; ++j) {
                const std::size_t reg = 2 * (V0 + j) + first_half + i;
                store_rows(acc32[i * NV + j][t], a, t0 + t,
                           row0 + static_cast<std::uint32_t>(8 * reg));
            }
}

// A whole 64-row tile for tokens [t0, t0 + T), T ≤ 4, in passes that fit the registers. Decode
// (T = 1) takes all 8 registers in one pass, so the tile streams from memory once; the other
// passes re-read the tile from L1/L2.
template <std::size_t T>
void tile_tokens(const std::uint8_t* w_tile, const ternary_args& a, std::size_t t0,
                 std::uint32_t row0) {
    if constexpr (T == 1) {
        tile_pass<1, both_halves, 0, 4>(w_tile, a, t0, row0);
    } else if constexpr (T == 2) {
        tile_pass<2, both_halves, 0, 2>(w_tile, a, t0, row0);
        tile_pass<2, both_halves, 2, 2>(w_tile, a, t0, row0);
    } else {
        static_assert(T <= 4);
        tile_pass<T, 0, 0, 2>(w_tile, a, t0, row0);
        tile_pass<T, 1, 0, 2>(w_tile, a, t0, row0);
        tile_pass<T, 0, 2, 2>(w_tile, a, t0, row0);
        tile_pass<T, 1, 2, 2>(w_tile, a, t0, row0);
    }
}

// One step of unpacked_tokens<2>: 4 code registers × 2 tokens into the int16 sums. Written as
// assembly because GCC 12 allocates the intrinsics' version with a register copy (and at times a
// stack store) per accumulator per step, which makes the loop bound by instruction dispatch
// (about 40 instructions a step where 22 do the work) instead of by vpmaddubsw.
inline void two_token_step(const std::uint8_t* step_codes, const std::int8_t* q0,
                           const std::int8_t* q1, __m256i (&acc)[4][2]) {
    __m256i x0, x1, w, p;
    const auto* c = reinterpret_cast<const __m256i*>(step_codes);
    asm("vpbroadcastd %[q0], %[x0]\n\t"
        "vpbroadcastd %[q1], %[x1]\n\t"
        "vmovdqa %[c0], %[w]\n\t"
        "vpmaddubsw %[x0], %[w], %[p]\n\t"
        "vpaddw %[p], %[a00], %[a00]\n\t"
        "vpmaddubsw %[x1], %[w], %[p]\n\t"
        "vpaddw %[p], %[a01], %[a01]\n\t"
        "vmovdqa %[c1], %[w]\n\t"
        "vpmaddubsw %[x0], %[w], %[p]\n\t"
        "vpaddw %[p], %[a10], %[a10]\n\t"
        "vpmaddubsw %[x1], %[w], %[p]\n\t"
        "vpaddw %[p], %[a11], %[a11]\n\t"
        "vmovdqa %[c2], %[w]\n\t"
        "vpmaddubsw %[x0], %[w], %[p]\n\t"
        "vpaddw %[p], %[a20], %[a20]\n\t"
        "vpmaddubsw %[x1], %[w], %[p]\n\t"
        "vpaddw %[p], %[a21], %[a21]\n\t"
        "vmovdqa %[c3], %[w]\n\t"
        "vpmaddubsw %[x0], %[w], %[p]\n\t"
        "vpaddw %[p], %[a30], %[a30]\n\t"
        "vpmaddubsw %[x1], %[w], %[p]\n\t"
        "vpaddw %[p], %[a31], %[a31]"
        : [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]),
          [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]),
          [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1]), [x0] "=&x"(x0), [x1] "=&x"(x1),
          [w] "=&x"(w), [p] "=&x"(p)
        : [q0] "m"(*reinterpret_cast<const std::int32_t*>(q0)),
          [q1] "m"(*reinterpret_cast<const std::int32_t*>(q1)), [c0] "m"(c[0]), [c1] "m"(c[1]),
          [c2] "m"(c[2]), [c3] "m"(c[3]));
}

// The same product from a tile unpacked beforehand (unpack_tile), one pass of 4 registers (32
// rows) over steps [s_begin, s_end): no shifts or masks in the inner loop, which matters once many
// token groups share the tile. The int32 sums of the steps before s_begin are in `partial` (T
// tokens × 32 rows) and those up to s_end go back there, unless this is the last block of steps:
// then the rows are stored. Integer sums, so the blocking changes no bit.
template <std::size_t T>
void unpacked_tokens(const std::uint8_t* codes, const ternary_args& a, std::size_t t0,
                     std::uint32_t row0, std::size_t s_begin, std::size_t s_end,
                     std::int32_t* partial) {
    const __m256i ones = _mm256_set1_epi16(1);
    const std::size_t steps = a.k / 4;
    const std::int8_t* q[T];
    for (std::size_t t = 0; t < T; ++t)
        q[t] = a.q + (t0 + t) * a.k;
    auto sums = [&](std::size_t t, std::size_t v) {
        return reinterpret_cast<__m256i*>(partial + 32 * t + 8 * v);
    };
    for (std::size_t s0 = s_begin; s0 < s_end; s0 += steps_per_widen) {
        __m256i acc16[4][T];
        for (auto& row : acc16)
            for (auto& v : row)
                v = _mm256_setzero_si256();
        for (std::size_t s = s0; s < s0 + steps_per_widen; ++s) {
            if constexpr (T == 2) {
                two_token_step(codes + s * 128, q[0] + 4 * s, q[1] + 4 * s, acc16);
            } else {
                __m256i x[T];
                for (std::size_t t = 0; t < T; ++t)
                    x[t] = broadcast4(q[t] + 4 * s);
                for (int v = 0; v < 4; ++v) {
                    const __m256i w = _mm256_load_si256(
                        reinterpret_cast<const __m256i*>(codes + s * 128 + 32 * v));
                    for (std::size_t t = 0; t < T; ++t)
                        acc16[v][t] = _mm256_add_epi16(acc16[v][t], _mm256_maddubs_epi16(w, x[t]));
                }
            }
        }
        // The int32 sums live in `partial` (L1), so the step loop holds only the int16 ones.
        for (std::size_t v = 0; v < 4; ++v)
            for (std::size_t t = 0; t < T; ++t) {
                const __m256i wide = _mm256_madd_epi16(acc16[v][t], ones);
                _mm256_store_si256(sums(t, v),
                                   s0 == 0 ? wide
                                           : _mm256_add_epi32(_mm256_load_si256(sums(t, v)), wide));
            }
    }
    if (s_end < steps)
        return;
    for (std::size_t t = 0; t < T; ++t)
        for (std::uint32_t v = 0; v < 4; ++v)
            store_rows(_mm256_load_si256(sums(t, v)), a, t0 + t, row0 + 8 * v);
}

// One code per byte, as two passes of 32 rows: pass p holds, for each step, registers 4p..4p+3
// one after the other (128 bytes), so unpacked_tokens reads each pass contiguously. 64 · k bytes
// (160 KiB at k = 2560), read from L2.
void unpack_tile(const std::uint8_t* w_tile, std::size_t k, std::uint8_t* codes) {
    const __m256i mask = _mm256_set1_epi8(3);
    const std::size_t steps = k / 4;
    for (std::size_t s = 0; s < steps; ++s)
        for (std::size_t r = 0; r < regs_per_tile; ++r)
            _mm256_store_si256(
                reinterpret_cast<__m256i*>(codes + (r / 4) * steps * 128 + s * 128 + 32 * (r % 4)),
                unpack_reg(w_tile + s * 64, r, mask));
}

} // namespace

void ternary_rows_avx2(const ternary_args& a) {
    const std::size_t tile_bytes = static_cast<std::size_t>(tile) * a.k / 4;
    const std::size_t pass_bytes = static_cast<std::size_t>(a.k) * 32;
    // Token blocks keep their activations (96 · k bytes) in L2 beside the unpacked tile.
    constexpr std::size_t token_block = 48 * unpacked_group;
    // The int32 sums of a token block's 32 rows between blocks of steps (12 KiB).
    alignas(32) std::int32_t partial[token_block * 32];
    for (std::size_t b0 = 0; b0 < a.n_tok; b0 += token_block) {
        const std::size_t b1 = b0 + token_block < a.n_tok ? b0 + token_block : a.n_tok;
        // With more than unpack_in_registers_up_to tokens the tile is unpacked once into the
        // caller's scratch and every group reads plain codes; with fewer the unpack is folded
        // into each group's product.
        const bool unpack_first = b1 - b0 > unpack_in_registers_up_to && a.scratch != nullptr;
        for (std::uint32_t row0 = a.row_begin; row0 < a.row_end; row0 += tile) {
            const std::uint8_t* w_tile = a.w + static_cast<std::size_t>(row0 / tile) * tile_bytes;
            if (unpack_first) {
                unpack_tile(w_tile, a.k, a.scratch);
                // The steps go in blocks whose codes (128 bytes a step) stay in L1 while every
                // token pair of the block reads them; a pass over all k from L2 for each pair
                // would need about as many bytes a cycle as L2 delivers.
                const std::size_t steps = a.k / 4;
                for (std::uint32_t p = 0; p < 2 && row0 + 32 * p < a.row_end; ++p) {
                    const std::uint8_t* codes = a.scratch + p * pass_bytes;
                    for (std::size_t s0 = 0; s0 < steps; s0 += steps_per_l1_block) {
                        const std::size_t s1 =
                            s0 + steps_per_l1_block < steps ? s0 + steps_per_l1_block : steps;
                        std::size_t t0 = b0;
                        for (; t0 + unpacked_group <= b1; t0 += unpacked_group)
                            unpacked_tokens<unpacked_group>(codes, a, t0, row0 + 32 * p, s0, s1,
                                                            partial + 32 * (t0 - b0));
                        if (t0 < b1)
                            unpacked_tokens<1>(codes, a, t0, row0 + 32 * p, s0, s1,
                                               partial + 32 * (t0 - b0));
                    }
                }
                continue;
            }
            // Groups of 4 tokens, then one group of the 1 to 3 left.
            std::size_t t0 = b0;
            for (; b1 - t0 >= 4; t0 += 4)
                tile_tokens<4>(w_tile, a, t0, row0);
            switch (b1 - t0) {
            case 3:
                tile_tokens<3>(w_tile, a, t0, row0);
                break;
            case 2:
                tile_tokens<2>(w_tile, a, t0, row0);
                break;
            case 1:
                tile_tokens<1>(w_tile, a, t0, row0);
                break;
            default:
                break;
            }
        }
    }
}

void quantize_row_avx2(const quantize_args& a) {
    const std::size_t n8 = a.k / 8 * 8;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 vmax = _mm256_setzero_ps();
    for (std::size_t i = 0; i < n8; i += 8)
        vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(a.x + i), abs_mask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    float max_abs = _mm_cvtss_f32(m4);
    for (std::size_t i = n8; i < a.k; ++i) {
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
    const __m256 vs = _mm256_set1_ps(s);
    const __m256 lo = _mm256_set1_ps(-128.0f);
    const __m256 hi = _mm256_set1_ps(127.0f);
    // After the two packs the eight bytes of each 128-bit half sit in dword order 0 4 1 5 ...;
    // this permutation puts them back in element order.
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i vsum = _mm256_setzero_si256();
    const std::size_t n32 = a.k / 32 * 32;
    std::size_t i = 0;
    auto codes = [&](std::size_t at) {
        __m256 r = _mm256_mul_ps(_mm256_loadu_ps(a.x + at), vs);
        r = _mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
        const __m256i qi = _mm256_cvtps_epi32(r);
        vsum = _mm256_add_epi32(vsum, qi);
        return qi;
    };
    for (; i < n32; i += 32) {
        const __m256i q0 = codes(i);
        const __m256i q1 = codes(i + 8);
        const __m256i q2 = codes(i + 16);
        const __m256i q3 = codes(i + 24);
        const __m256i p01 = _mm256_packs_epi32(q0, q1);
        const __m256i p23 = _mm256_packs_epi32(q2, q3);
        const __m256i bytes = _mm256_packs_epi16(p01, p23);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.q + i),
                            _mm256_permutevar8x32_epi32(bytes, order));
    }
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(vsum), _mm256_extracti128_si256(vsum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    std::int32_t total = _mm_cvtsi128_si32(s4);
    for (; i < a.k; ++i) {
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
