// A block-wide sum in double that ends in the same float as a CPU kernel's sum in index order.
// Several CPU kernels (RMSNorm's Σ x², softmax's Σ e) add n non-negative terms in double one after
// the other and round a value made from the sum to float. A block cannot follow that chain
// without running it on one thread (n dependent adds: ~10 µs for n = 2560), so it adds in its own
// order and checks whether the order can matter: any order's sum of n non-negative terms is
// within (n-1)·2^-53 (relative, to first order) of the exact sum, so when every double within
// twice that of the block's value rounds to the same float (same_float_within), the CPU's value
// rounds to it too. Otherwise, about once in 10^5 sums for n in the thousands, thread 0 redoes
// the CPU's sequential sum: the float is the CPU's bits by construction.
#pragma once

#include "kernels/cuda/grid.hpp"

namespace bitnet::kernels::cuda {

/// Whether every double within relative distance `tol` of v converts to the same float as v.
/// Rounding to nearest is monotonic, so the two ends of the interval decide. False for NaN.
BITNET_DEVICE bool same_float_within(double v, double tol) {
    return static_cast<float>(v * (1.0 - tol)) == static_cast<float>(v * (1.0 + tol));
}

/// The relative distance two sums in double of the same n non-negative terms can be apart when
/// taken in different orders and followed by `extra_ops` more correctly rounded operations:
/// twice each one's bound, padded for second-order terms and for the `slots` zero partials a
/// block adds (additions of zero are exact, counting them keeps the bound obviously safe).
BITNET_DEVICE double order_tolerance(double n, double slots, double extra_ops) {
    return 4.0 * (n + slots + extra_ops + 2.0) * 0x1p-53;
}

/// Ends a block-wide sum of n non-negative terms, each thread's partial in `part`: warp
/// butterflies, then the warps in order on thread 0, then `finish(sum)` (the CPU's double
/// operations between its sum and its rounding to float, `extra_ops` of them); when the order
/// could show, `finish(sequential())` with the CPU's own sum instead. Every thread reads the
/// float from `out` after this returns. warp_partials and out are BITNET_SHARED in the caller,
/// warp_partials with one slot per warp.
template <class Finish, class Sequential>
BITNET_DEVICE void finish_sum_as_cpu(const block& b, per_thread<double>& part,
                                     double* warp_partials, float& out, unsigned n,
                                     double extra_ops, Finish finish, Sequential sequential) {
    warp_sum(b, part);
    b.threads([&](unsigned t) {
        if (t % warp_size == 0)
            warp_partials[t / warp_size] = part[t];
    });
    b.sync();
    b.threads([&](unsigned t) {
        if (t != 0)
            return;
        double sum = 0.0;
        for (unsigned w = 0; w < b.size() / warp_size; ++w)
            sum += warp_partials[w];
        double v = finish(sum);
        if (!same_float_within(v, order_tolerance(n, b.size(), extra_ops)))
            v = finish(sequential()); // the rare sum where the order shows
        out = static_cast<float>(v);
    });
    b.sync();
}

} // namespace bitnet::kernels::cuda
