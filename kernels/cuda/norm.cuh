// RMSNorm on the device, one block per output row.
//
// Fidelity: bit for bit with kernels::rms_norm, by construction. The CPU sums the float squares
// in double strictly in index order; the block sums in its own order and falls back to the CPU's
// where the order could change mean + eps as a float (cpu_order_sum.hpp). Everything else is the
// CPU's expression with each operation rounded as written (rounded_math.hpp).
#pragma once

#include "kernels/cuda/cpu_order_sum.hpp"
#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#include <cstddef>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct rms_norm_kernel {
    using args = rms_norm_args;
    static constexpr unsigned threads = 256;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned r = b.x();
        const unsigned n = a.n;
        const unsigned nt = b.size();
        const std::size_t src = a.rows != nullptr ? static_cast<std::size_t>(a.rows[r]) : r;
        const float* x = a.x + src * a.ldx;
        float* y = a.y + static_cast<std::size_t>(r) * a.ldy;

        BITNET_SHARED double warp_sums[max_threads / warp_size];
        BITNET_SHARED float mean_eps; // mean(x²) + eps as the CPU rounds it to float
        per_thread<double> part;
        b.threads([&](unsigned t) {
            double s = 0.0;
            for (unsigned i = t; i < n; i += nt)
                s += static_cast<double>(mul_rn(x[i], x[i]));
            part[t] = s;
        });
        finish_sum_as_cpu(
            b, part, warp_sums, mean_eps, n, 2.0,
            [&](double sum) { return sum / static_cast<double>(n) + static_cast<double>(a.eps); },
            [&] {
                double sum = 0.0;
                for (unsigned i = 0; i < n; ++i)
                    sum += static_cast<double>(mul_rn(x[i], x[i]));
                return sum;
            });
        b.threads([&](unsigned t) {
            const float scale = rsqrt_rn(mean_eps);
            for (unsigned i = t; i < n; i += nt)
                y[i] = mul_rn(mul_rn(x[i], scale), a.weight[i]);
        });
    }
};

template <class Launcher>
void launch(const rms_norm_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n == 0)
        return; // a launch of zero blocks is an error on the device
    l.template run<rms_norm_kernel>(launch_shape{a.n_rows, 1, rms_norm_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
