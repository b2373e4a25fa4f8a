// RMSNorm and the int8 quantization of its output in one launch (norm_quantize_args), with the
// feed-forward's ReLU² gate folded in when asked. Every projection's input in the forward pass is
// a norm followed by a quantization (the block inputs, the sub-norms), and the gate's output is
// read only by the sub-norm: three launches and two round trips of a [T][n] float buffer through
// memory become one launch that reads its inputs twice from L1/L2 and writes only the codes.
//
// Fidelity: the unfused chain's bits by construction. One block per row, as norm.cuh and
// quantize.cuh each use; the value of element i is computed with the same rounded operations
// wherever it is needed (gate: relu_sqr_gate's two products; norm: rms_norm's two products after
// the same sum, finished as the CPU's order would: cpu_order_sum.hpp), so recomputing it in each
// phase gives the same float every time, and the absmax, scale and codes are quantize.cuh's
// expressions over those floats.
#pragma once

#include "kernels/cuda/cpu_order_sum.hpp"
#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/rounded_math.hpp"

#include <cstddef>

namespace bitnet::kernels::cuda {

struct norm_quantize_kernel {
    using args = norm_quantize_args;
    static constexpr unsigned threads = 256;

    /// Element i of the row before the norm: x, or relu(x)² · u.
    static BITNET_DEVICE float input(const args& a, const float* x, const float* u, unsigned i) {
        if (a.u == nullptr)
            return x[i];
        const float g = x[i];
        const float r = g > 0.0f ? g : 0.0f;
        return mul_rn(mul_rn(r, r), u[i]);
    }

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned row = b.x();
        const unsigned n = a.n;
        const unsigned nt = b.size();
        const float* x = a.x + static_cast<std::size_t>(row) * a.ldx;
        const float* u = a.u != nullptr ? a.u + static_cast<std::size_t>(row) * a.ldu : nullptr;
        std::int8_t* q = a.q + static_cast<std::size_t>(row) * a.ldq;
        BITNET_SHARED double warp_sums[max_threads / warp_size];
        BITNET_SHARED float warp_maxima[max_threads / warp_size];
        BITNET_SHARED float mean_eps;
        BITNET_SHARED float scale;

        if (a.weight != nullptr) {
            per_thread<double> part;
            b.threads([&](unsigned t) {
                double s = 0.0;
                for (unsigned i = t; i < n; i += nt) {
                    const float v = input(a, x, u, i);
                    s += static_cast<double>(mul_rn(v, v));
                }
                part[t] = s;
            });
            finish_sum_as_cpu(
                b, part, warp_sums, mean_eps, n, 2.0,
                [&](double sum) {
                    return sum / static_cast<double>(n) + static_cast<double>(a.eps);
                },
                [&] {
                    double sum = 0.0;
                    for (unsigned i = 0; i < n; ++i) {
                        const float v = input(a, x, u, i);
                        sum += static_cast<double>(mul_rn(v, v));
                    }
                    return sum;
                });
        }
        // The normed value (rms_norm's y, `inv` its 1 / sqrt(mean + eps)), or the input itself
        // without a norm.
        auto value = [&](unsigned i, float inv) {
            const float v = input(a, x, u, i);
            if (a.weight == nullptr)
                return v;
            return mul_rn(mul_rn(v, inv), a.weight[i]);
        };
        auto inverse_rms = [&] { return a.weight != nullptr ? rsqrt_rn(mean_eps) : 1.0f; };

        per_thread<float> m;
        b.threads([&](unsigned t) {
            const float inv = inverse_rms();
            float mt = 0.0f;
            for (unsigned i = t; i < n; i += nt) {
                const float v = abs_of(value(i, inv));
                mt = v > mt ? v : mt; // keeps mt for a NaN, as the CPU's std::max(max, v)
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
            const float inv = inverse_rms();
            for (unsigned i = t; i < n; i += nt) {
                q[i] = int8_code_of(value(i, inv), s);
            }
        });
    }
};

template <class Launcher>
void launch(const norm_quantize_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n == 0)
        return; // a launch of zero blocks is an error on the device
    l.template run<norm_quantize_kernel>({a.n_rows, 1, norm_quantize_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
