// A measurement, not a serving kernel: the decode GEMV (one token) over ternary weights packed 5
// codes a byte (base 3, 1.6 bits a weight) instead of the 4 a byte (2 bits) that the engine uses,
// to see whether the smaller weights make memory-bound decode faster once the base-3 unpack is
// paid. bench_kernels times it against ternary_matmul on the 2B-4T layer stack
// (bench/RESULTS.md, "1.6-bit packing"). Compiled with AVX-512 F/BW flags; called only when CPUID
// reports AVX-512.
//
// Layout (pack in bench_kernels.cpp): tiles of 80 rows; for each step s of 4 columns a 64-byte
// chunk whose byte j holds the codes of rows 16i + j/4 (i = 0..4), column 4s + j%4, as
// b = ceil(256 · v / 243) with v = Σ_i code_i · 3^(4−i) (llama.cpp's TQ1_0 trick): b / 256 is then
// 0.c0c1c2c3c4 in base 3 closely enough that digit i is the integer part of 3 · frac(3^i · b/256).
// In bytes: with t_0 = b, t_{i+1} = 3·t_i mod 256 and code_i = ⌊3·t_i / 256⌋, which is the number
// of carries out of the byte adds t + t and (2t mod 256) + t. So each digit costs two byte adds,
// one sign-bit mask, one unsigned compare and two masked moves: no multiply, no table, and the
// result is exactly the u8 operand of vpdpbusd (16 rows × 4 columns), as in the 2-bit layout.
#include "kernels/cpu/x86_intrinsics.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace bitnet::bench::detail {

namespace {

inline __m512i broadcast4(const std::int8_t* p) {
    std::int32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

} // namespace

// Integer dots Σ_k code[m][k] · q[k] for the rows of tiles [tile_begin, tile_end).
void gemv5_tiles_avx512(const std::uint8_t* w, std::size_t k, const std::int8_t* q,
                        std::int32_t* dots, std::size_t tile_begin, std::size_t tile_end) {
    const std::size_t steps = k / 4;
    const std::size_t tile_bytes = steps * 64;
    const __m512i one = _mm512_set1_epi8(1);
    for (std::size_t ti = tile_begin; ti < tile_end; ++ti) {
        const std::uint8_t* tile = w + ti * tile_bytes;
        __m512i acc[5];
        for (auto& a : acc)
            a = _mm512_setzero_si512();
        for (std::size_t s = 0; s < steps; ++s) {
            _mm_prefetch(reinterpret_cast<const char*>(tile + s * 64 + 2048), _MM_HINT_T0);
            __m512i t = _mm512_load_si512(tile + s * 64);
            const __m512i x = broadcast4(q + 4 * s);
            for (int i = 0; i < 5; ++i) {
                // carry of t + t: the top bit of t; carry of (2t mod 256) + t: the sum below t.
                const __mmask64 c1 = _mm512_movepi8_mask(t);
                const __m512i u = _mm512_add_epi8(t, t);
                const __m512i w3 = _mm512_add_epi8(u, t);
                const __mmask64 c2 = _mm512_cmplt_epu8_mask(w3, t);
                __m512i code = _mm512_maskz_mov_epi8(c1, one);
                code = _mm512_mask_add_epi8(code, c2, code, one);
                acc[i] = _mm512_dpbusd_epi32(acc[i], code, x);
                t = w3;
            }
        }
        for (int i = 0; i < 5; ++i)
            _mm512_storeu_si512(dots + ti * 80 + 16 * i, acc[i]);
    }
}

} // namespace bitnet::bench::detail
