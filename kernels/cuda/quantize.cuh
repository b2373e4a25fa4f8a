// Per-token int8 quantization of activations on the device: kernels::quantize_activations' bytes
// and scales, bit for bit. One block per row. The absmax is exact in any order (a max of floats,
// widened to double exactly), so a block reduction gives the CPU's value; the scale is the same
// double division narrowed to float; codes use the same float product rounded half to even
// (rintf on the device, nearbyint in the default rounding mode on the host) and the same clamp.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#if !defined(__CUDACC__)
#include <cmath>
#endif

namespace bitnet::kernels::cuda {

/// x rounded to the nearest integer, ties to even (the CPU's std::nearbyint in the default mode).
BITNET_DEVICE float round_half_even(float x) {
#if defined(__CUDACC__)
    return rintf(x);
#else
    return std::nearbyint(x);
#endif
}

BITNET_DEVICE float abs_of(float x) {
#if defined(__CUDACC__)
    return fabsf(x);
#else
    return std::fabs(x);
#endif
}

/// The int8 scale of a row from its warps' |x| maxima: 127 / max(1e-5, the largest), the
/// CPU's double division narrowed to float (IEEE on the device whatever the flags).
BITNET_DEVICE float int8_scale_of(const float* warp_maxima, unsigned n_warps) {
    double max = 1e-5;
    for (unsigned w = 0; w < n_warps; ++w) {
        const double v = static_cast<double>(warp_maxima[w]);
        max = v > max ? v : max;
    }
#if defined(__CUDA_ARCH__)
    return __double2float_rn(__ddiv_rn(127.0, max));
#else
    return static_cast<float>(127.0 / max);
#endif
}

/// The int8 code of v at scale s: the float product rounded half to even, clamped to [-128, 127].
BITNET_DEVICE std::int8_t int8_code_of(float v, float s) {
    float r = round_half_even(mul_rn(v, s));
    r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);
    return static_cast<std::int8_t>(static_cast<int>(r));
}

struct quantize_kernel {
    using args = quantize_args;
    static constexpr unsigned threads = 256;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned row = b.x();
        const float* x = a.x + static_cast<std::size_t>(row) * a.ldx;
        std::int8_t* q = a.q + static_cast<std::size_t>(row) * a.ldq;
        BITNET_SHARED float warp_maxima[max_threads / warp_size];
        BITNET_SHARED float scale;

        // |x| maxima: per thread over a stride, then per warp. `v > m` keeps m for a NaN, as the
        // CPU's std::max(max, v) does.
        per_thread<float> m;
        b.threads([&](unsigned t) {
            float mt = 0.0f;
            for (unsigned i = t; i < a.k; i += b.size()) {
                const float v = abs_of(x[i]);
                mt = v > mt ? v : mt;
            }
            m[t] = mt;
        });
        warp_max(b, m);
        store_warp_results(b, m, warp_maxima);
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            scale = int8_scale_of(warp_maxima, b.size() / warp_size);
            a.scale[row] = scale;
        });
        b.sync();
        b.threads([&](unsigned t) {
            const float s = scale;
            for (unsigned i = t; i < a.k; i += b.size()) {
                q[i] = int8_code_of(x[i], s);
            }
        });
    }
};

template <class Launcher>
void launch(const quantize_args& a, Launcher& l) {
    if (a.n_rows == 0)
        return;
    l.template run<quantize_kernel>({a.n_rows, 1, quantize_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
