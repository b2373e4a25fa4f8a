#include "kernels/rope.hpp"

#include <cmath>

namespace bitnet::kernels {

void rope_angles_for(std::uint32_t pos, std::uint32_t head_dim, float base,
                     const float* freq_factors, rope_angles& out) {
    const std::uint32_t half = head_dim / 2;
    out.cos.resize(half);
    out.sin.resize(half);
    const float theta_scale = std::pow(base, -2.0f / static_cast<float>(head_dim));
    float theta = static_cast<float>(pos);
    for (std::uint32_t i = 0; i < half; ++i) {
        const float t = freq_factors != nullptr ? theta / freq_factors[i] : theta;
        out.cos[i] = std::cos(t);
        out.sin[i] = std::sin(t);
        theta *= theta_scale;
    }
}

void rope_apply(float* x, std::uint32_t n_heads, std::uint32_t head_dim, rope_style style,
                const rope_angles& a) {
    const std::uint32_t half = head_dim / 2;
    for (std::uint32_t h = 0; h < n_heads; ++h) {
        float* v = x + static_cast<std::size_t>(h) * head_dim;
        for (std::uint32_t i = 0; i < half; ++i) {
            const std::uint32_t i0 = style == rope_style::neox ? i : 2 * i;
            const std::uint32_t i1 = style == rope_style::neox ? i + half : 2 * i + 1;
            const float x0 = v[i0];
            const float x1 = v[i1];
            v[i0] = x0 * a.cos[i] - x1 * a.sin[i];
            v[i1] = x0 * a.sin[i] + x1 * a.cos[i];
        }
    }
}

} // namespace bitnet::kernels
