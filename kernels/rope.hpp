// Rotary position embedding (docs/GGUF-FORMAT.md §3.4 step 4, §3.6). Angles are built as
// ggml_rope_cache_init does, in float and iteratively: theta starts at the position and is
// multiplied by base^(-2/head_dim) once per pair; an optional frequency factor divides it. Getting
// this exactly right matters: computing the angles in double moves bitnet.cpp's logits by ~0.05.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {

enum class rope_style {
    neox, ///< pairs (i, i + head_dim/2): bitnet archs
    norm, ///< interleaved pairs (2i, 2i+1): llama
};

/// cos/sin of every pair angle for one position: [head_dim/2] each.
struct rope_angles {
    std::vector<float> cos;
    std::vector<float> sin;
};

/// Angles for position `pos`. freq_factors is null or [head_dim/2] divisors (rope_freqs).
void rope_angles_for(std::uint32_t pos, std::uint32_t head_dim, float base,
                     const float* freq_factors, rope_angles& out);

/// Rotates n_heads heads of head_dim floats (contiguous) in place with the given angles.
void rope_apply(float* x, std::uint32_t n_heads, std::uint32_t head_dim, rope_style style,
                const rope_angles& a);

} // namespace bitnet::kernels
