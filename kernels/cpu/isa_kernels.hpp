// The entry points of the per-ISA translation units (kernels/cpu/*_avx2.cpp, *_avx512.cpp), called
// only by the dispatchers in kernels/*.cpp after a CPUID check. They take plain pointer views, not
// the public structs: an ISA file is compiled with -mavx512f etc., and any inline function or
// template it instantiates from a shared header (std::vector members, aligned_buffer::data) could
// be kept by the linker as the one copy the whole program uses, which would then fault on a CPU
// without that ISA. So these files include nothing of ours but this header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::kernels::cpu {

/// Rows per tile of the one tiled ternary layout that every SIMD family reads (pack_tiled in
/// kernels/ternary_matmul.cpp): for each step s of 4 columns a 64-byte chunk whose byte j holds, at
/// bits 2v+1..2v, the code of row 16v + j/4, column 4s + j%4. One layout for all families, so a
/// model packed once runs under any of them (the engine may pick a family per operation).
inline constexpr std::uint32_t simd_tile_rows = 64;

/// One call of a ternary product over weight rows [row_begin, row_end).
struct ternary_args {
    const std::uint8_t* w = nullptr; ///< tiled layout, ceil(rows / tile) tiles of tile·k/4 bytes
    std::uint32_t rows = 0;
    std::uint32_t k = 0; ///< a multiple of 128
    float w_scale = 0.0f;
    const std::int8_t* q = nullptr; ///< [n_tok][k]
    const float* act_scale = nullptr;
    const std::int32_t* act_sum = nullptr;
    std::size_t n_tok = 0;
    float* y = nullptr; ///< row t at y + t·ldy
    std::size_t ldy = 0;
    std::uint32_t row_begin = 0; ///< a multiple of the tile
    std::uint32_t row_end = 0;
    /// Null, or ternary_scratch_bytes(k) bytes, 64-byte aligned, owned by the calling thread: room
    /// for one tile unpacked to a code per byte, which the AVX2 family's batched calls reuse
    /// across token groups (the AVX-512 family reads the packed tile directly).
    std::uint8_t* scratch = nullptr;
};

/// Scratch a ternary call may use: one tile, a code per byte.
constexpr std::size_t ternary_scratch_bytes(std::size_t k) noexcept {
    return static_cast<std::size_t>(simd_tile_rows) * k;
}

/// Quantizes one activation row as quantize_row_i8_s (docs/GGUF-FORMAT.md §3.5), bit-identical to
/// the scalar one.
struct quantize_args {
    const float* x = nullptr;
    std::size_t k = 0;
    std::int8_t* q = nullptr;
    float* scale = nullptr;
    std::int32_t* sum = nullptr;
};

/// One call of the F16 product over weight rows [row_begin, row_end). x holds n_tok rows of cols
/// floats already rounded to F16 (stride cols).
struct f16_args {
    const std::uint16_t* w = nullptr; ///< [rows][cols]
    std::size_t cols = 0;
    const float* x = nullptr;
    std::size_t n_tok = 0;
    float* y = nullptr;
    std::size_t ldy = 0;
    std::size_t row_begin = 0;
    std::size_t row_end = 0;
};

void ternary_rows_avx2(const ternary_args& a);
void ternary_rows_avx512(const ternary_args& a);
void quantize_row_avx2(const quantize_args& a);
void quantize_row_avx512(const quantize_args& a);
void f16_rows_avx2(const f16_args& a);
void f16_rows_avx512(const f16_args& a);

} // namespace bitnet::kernels::cpu
