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
// 4 row registers × 6 tokens = 24 accumulators, plus 4 weight registers, the mask and a broadcast:
// 30 of the 32 zmm registers, so nothing spills.
constexpr std::size_t max_tokens = 6;

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

// One 64-row tile against tokens [t0, t0 + T), unpacking each chunk as it is loaded: the decode
// path, and the path for a token count that fits one register tile.
template <std::size_t T>
void tile_tokens(const std::uint8_t* w_tile, const ternary_args& a, std::size_t t0,
                 std::uint32_t row0) {
    const __m512i mask = _mm512_set1_epi8(3);
    const std::size_t steps = a.k / 4;
    const std::int8_t* q[T];
    for (std::size_t t = 0; t < T; ++t)
        q[t] = a.q + (t0 + t) * a.k;
    __m512i acc[4][T];
    for (auto& row : acc)
        for (auto& v : row)
            v = _mm512_setzero_si512();
    if constexpr (T == 1) {
        // Decode: one token gives only four dependent chains per chunk, too few to cover
        // vpdpbusd's latency, so alternate two accumulator sets over even and odd steps. The
        // prefetch 2 KiB ahead (the next tile follows this one) cut the CPU time of a
        // memory-bound 30-layer decode by about a sixth.
        __m512i odd[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                          _mm512_setzero_si512()};
        for (std::size_t s = 0; s < steps; s += 2) {
            _mm_prefetch(reinterpret_cast<const char*>(w_tile + s * 64 + 2048), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(w_tile + s * 64 + 2048 + 64), _MM_HINT_T0);
            const __m512i b0 = _mm512_load_si512(w_tile + s * 64);
            const __m512i b1 = _mm512_load_si512(w_tile + s * 64 + 64);
            const __m512i x0 = broadcast4(q[0] + 4 * s);
            const __m512i x1 = broadcast4(q[0] + 4 * s + 4);
            for (int v = 0; v < 4; ++v) {
                const __m512i w0 = _mm512_and_si512(_mm512_srli_epi16(b0, 2 * v), mask);
                const __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(b1, 2 * v), mask);
                acc[v][0] = _mm512_dpbusd_epi32(acc[v][0], w0, x0);
                odd[v] = _mm512_dpbusd_epi32(odd[v], w1, x1);
            }
        }
        for (int v = 0; v < 4; ++v)
            acc[v][0] = _mm512_add_epi32(acc[v][0], odd[v]);
    } else {
        for (std::size_t s = 0; s < steps; ++s) {
            const __m512i b = _mm512_load_si512(w_tile + s * 64);
            __m512i w[4];
            for (int v = 0; v < 4; ++v)
                w[v] = _mm512_and_si512(_mm512_srli_epi16(b, 2 * v), mask);
            for (std::size_t t = 0; t < T; ++t) {
                const __m512i x = broadcast4(q[t] + 4 * s);
                for (int v = 0; v < 4; ++v)
                    acc[v][t] = _mm512_dpbusd_epi32(acc[v][t], w[v], x);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t)
        for (std::uint32_t v = 0; v < 4; ++v)
            store_rows(acc[v][t], a, t0 + t, row0 + 16 * v);
}

// The same product from a tile unpacked beforehand (unpack_tile): the inner loop is only loads,
// broadcasts and vpdpbusd, which matters once many token groups share the tile.
template <std::size_t T>
void unpacked_tokens(const std::uint8_t* codes, const ternary_args& a, std::size_t t0,
                     std::uint32_t row0) {
    const std::size_t steps = a.k / 4;
    const std::int8_t* q[T];
    for (std::size_t t = 0; t < T; ++t)
        q[t] = a.q + (t0 + t) * a.k;
    // The tile's 64 rows in two passes of 32 (2 × T accumulators, at most 12 of the 32 zmm):
    // with all four row registers at once (4 × 6 = 24 accumulators) GCC 12 kept the accumulator
    // array on the stack and the loop ran at the speed of its stores, not of vpdpbusd (perf
    // annotate, bench/RESULTS.md). Each pass re-reads the activations, which stay in L1/L2.
    for (int half = 0; half < 2; ++half) {
        __m512i acc[2][T];
        for (auto& row : acc)
            for (auto& v : row)
                v = _mm512_setzero_si512();
        const std::uint8_t* c = codes + 128 * half;
        for (std::size_t s = 0; s < steps; ++s) {
            const __m512i w0 = _mm512_load_si512(c + s * 256);
            const __m512i w1 = _mm512_load_si512(c + s * 256 + 64);
            for (std::size_t t = 0; t < T; ++t) {
                const __m512i x = broadcast4(q[t] + 4 * s);
                acc[0][t] = _mm512_dpbusd_epi32(acc[0][t], w0, x);
                acc[1][t] = _mm512_dpbusd_epi32(acc[1][t], w1, x);
            }
        }
        for (std::size_t t = 0; t < T; ++t)
            for (std::uint32_t v = 0; v < 2; ++v)
                store_rows(acc[v][t], a, t0 + t, row0 + 16 * (2 * half + v));
    }
}

// One code per byte, for each step the four registers of tile_tokens one after the other:
// 64 · k bytes (160 KiB at k = 2560, 432 KiB at 6912), which stay in L2 while read.
void unpack_tile(const std::uint8_t* w_tile, std::size_t k, std::uint8_t* codes) {
    const __m512i mask = _mm512_set1_epi8(3);
    for (std::size_t s = 0; s < k / 4; ++s) {
        const __m512i b = _mm512_load_si512(w_tile + s * 64);
        for (int v = 0; v < 4; ++v)
            _mm512_store_si512(codes + s * 256 + 64 * v,
                               _mm512_and_si512(_mm512_srli_epi16(b, 2 * v), mask));
    }
}

using tile_fn = void (*)(const std::uint8_t*, const ternary_args&, std::size_t, std::uint32_t);
constexpr tile_fn tile_fns[max_tokens + 1] = {nullptr,        tile_tokens<1>, tile_tokens<2>,
                                              tile_tokens<3>, tile_tokens<4>, tile_tokens<5>,
                                              tile_tokens<6>};
constexpr tile_fn unpacked_fns[max_tokens + 1] = {nullptr,
                                                  unpacked_tokens<1>,
                                                  unpacked_tokens<2>,
                                                  unpacked_tokens<3>,
                                                  unpacked_tokens<4>,
                                                  unpacked_tokens<5>,
                                                  unpacked_tokens<6>};

} // namespace

void ternary_rows_avx512(const ternary_args& a) {
    const std::size_t tile_bytes = static_cast<std::size_t>(tile) * a.k / 4;
    // Tokens are taken in blocks whose activations (96 · k bytes, 240 KiB at k = 2560) stay in L2
    // beside the unpacked tile; every tile is re-read once per block.
    constexpr std::size_t token_block = 16 * max_tokens;
    for (std::size_t b0 = 0; b0 < a.n_tok; b0 += token_block) {
        const std::size_t b1 = b0 + token_block < a.n_tok ? b0 + token_block : a.n_tok;
        // With more than one token group the tile is unpacked once into the caller's scratch and
        // every group reads plain codes; with one group the unpack is folded into the product.
        const bool unpack_first = b1 - b0 > max_tokens && a.scratch != nullptr;
        for (std::uint32_t row0 = a.row_begin; row0 < a.row_end; row0 += tile) {
            const std::uint8_t* w_tile = a.w + static_cast<std::size_t>(row0 / tile) * tile_bytes;
            const std::uint8_t* src = w_tile;
            const tile_fn* fns = tile_fns;
            if (unpack_first) {
                unpack_tile(w_tile, a.k, a.scratch);
                src = a.scratch;
                fns = unpacked_fns;
            }
            std::size_t t0 = b0;
            for (; t0 + max_tokens <= b1; t0 += max_tokens)
                fns[max_tokens](src, a, t0, row0);
            if (t0 < b1)
                fns[b1 - t0](src, a, t0, row0);
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
