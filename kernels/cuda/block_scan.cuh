// Block-wide helpers of the device sampler (sample.cuh): an order key for logits, a bitonic sort
// of those keys in global memory, and running sums in double whose decisions equal a CPU loop's
// that adds the same terms one by one in order.
//
// Why running sums need care: the CPU sampler decides a top-p cut and a draw by adding terms in
// order and stopping where the sum first passes a threshold. A block adds in its own order, so its
// sums differ from the CPU's by rounding: at most (n + threads) · 2^-53 of the total each, to
// first order (cpu_order_sum.hpp's bound). When every sum near the crossing is farther than that
// from the threshold, the block's crossing is the CPU's; otherwise the caller redoes the CPU's
// loop on one thread (rare: the threshold must fall within ~1e-10 of the total of a sum). Either
// way the index is the CPU's, by construction.
#pragma once

#include "kernels/cuda/cpu_order_sum.hpp"
#include "kernels/cuda/grid.hpp"

#include <cstdint>

namespace bitnet::kernels::cuda {

/// The float's bits as an unsigned that orders like the float (NaN excluded; -0 as +0, since the
/// CPU's comparisons see them equal).
BITNET_DEVICE std::uint32_t ordered_bits(float z) {
    std::uint32_t u = 0;
#if defined(__CUDACC__)
    u = __float_as_uint(z == 0.0f ? 0.0f : z);
#else
    const float c = z == 0.0f ? 0.0f : z;
    std::memcpy(&u, &c, sizeof u);
#endif
    return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

/// The sampler's candidate order as one integer: larger logits first, equal logits by lower id
/// (the CPU's by_logit_desc), so ascending keys are that order.
BITNET_DEVICE std::uint64_t candidate_key(float z, std::uint32_t id) {
    return (static_cast<std::uint64_t>(~ordered_bits(z)) << 32) | id;
}

/// Sorts keys[0, n_pow2) ascending (n_pow2 a power of two; pad with ~0), a bitonic network run
/// by one block in global memory (every compare-exchange of a step is independent; a sync ends
/// each step).
BITNET_DEVICE void block_bitonic_sort(const block& b, std::uint64_t* keys, std::uint32_t n_pow2) {
    for (std::uint32_t k = 2; k <= n_pow2; k <<= 1)
        for (std::uint32_t j = k >> 1; j > 0; j >>= 1) {
            b.threads([&](unsigned t) {
                for (std::uint32_t i = t; i < n_pow2; i += b.size()) {
                    const std::uint32_t l = i ^ j;
                    if (l <= i)
                        continue;
                    const std::uint64_t x = keys[i];
                    const std::uint64_t y = keys[l];
                    const bool ascending = (i & k) == 0;
                    if ((x > y) == ascending) {
                        keys[i] = y;
                        keys[l] = x;
                    }
                }
            });
            b.sync();
        }
}

/// The largest block the running-sum helpers serve (their shared memory has a slot per thread).
inline constexpr unsigned scan_max_threads = 512;

/// Shared memory of the running-sum helpers: one slot per thread.
struct scan_shared {
    double part[scan_max_threads];
    double before[scan_max_threads];
    double at[scan_max_threads];
    std::uint32_t first[scan_max_threads];
    double total;
    std::uint32_t index;
    bool uncertain;
};

/// Σ term(i) for i < n in double, in the block's order (within order_tolerance of any order's).
/// Every thread reads the result from s.total after it returns.
template <class Term>
BITNET_DEVICE void block_sum(const block& b, std::uint32_t n, Term term, scan_shared& s) {
    b.threads([&](unsigned t) {
        double v = 0.0;
        for (std::uint32_t i = t; i < n; i += b.size())
            v += term(i);
        s.part[t] = v;
    });
    b.sync();
    b.threads([&](unsigned t) {
        if (t != 0)
            return;
        double v = 0.0;
        for (unsigned w = 0; w < b.size(); ++w)
            v += s.part[w];
        s.total = v;
    });
    b.sync();
}

/// The relative bound on how far two sums of n non-negative terms taken in different orders may
/// be apart, with room for the few roundings around them (a division of each term, the product
/// that makes a threshold from a total).
BITNET_DEVICE double running_sum_tolerance(std::uint32_t n, unsigned threads) {
    return order_tolerance(static_cast<double>(n), static_cast<double>(threads), 8.0);
}

/// The first i < n at which the running sum of term(0..i) crosses `threshold` (strict: passes
/// it, threshold < sum; else reaches it, sum >= threshold), or n when it never does, as a CPU
/// loop adding the terms in order finds it, provided the block's sums decide it with a margin
/// of `margin` (absolute): then s.index is that index and s.uncertain false. Otherwise
/// s.uncertain is true and the caller must run the CPU's loop. Each thread sums a contiguous
/// range, so the block's running sums rise with i as the CPU's do.
template <class Term>
BITNET_DEVICE void block_first_crossing(const block& b, std::uint32_t n, Term term,
                                        double threshold, bool strict, double margin,
                                        scan_shared& s) {
    const std::uint32_t per = (n + b.size() - 1) / b.size();
    auto crosses = [&](double sum) { return strict ? threshold < sum : sum >= threshold; };
    b.threads([&](unsigned t) {
        double v = 0.0;
        const std::uint32_t begin = t * per;
        for (std::uint32_t i = begin; i < n && i < begin + per; ++i)
            v += term(i);
        s.part[t] = v;
    });
    b.sync();
    b.threads([&](unsigned t) { // exclusive prefix over the threads' sums
        if (t != 0)
            return;
        double run = 0.0;
        for (unsigned w = 0; w < b.size(); ++w) {
            s.before[w] = run;
            run += s.part[w];
        }
    });
    b.sync();
    b.threads([&](unsigned t) {
        double sum = s.before[t];
        double prev = sum;
        s.first[t] = n;
        const std::uint32_t begin = t * per;
        for (std::uint32_t i = begin; i < n && i < begin + per; ++i) {
            prev = sum;
            sum += term(i);
            if (crosses(sum)) {
                s.first[t] = i;
                s.before[t] = prev;
                s.at[t] = sum;
                return;
            }
        }
        s.at[t] = sum; // no crossing: this thread's last running sum
    });
    b.sync();
    b.threads([&](unsigned t) {
        if (t != 0)
            return;
        std::uint32_t index = n;
        double before = 0.0;
        double at = 0.0;
        for (unsigned w = 0; w < b.size(); ++w)
            if (s.first[w] < n) {
                index = s.first[w];
                before = s.before[w];
                at = s.at[w];
                break;
            } else if (w * per < n) {
                before = s.at[w]; // the last sum before any crossing
            }
        s.index = index;
        if (index < n)
            s.uncertain = !crosses(at - margin) || crosses(before + margin);
        else
            s.uncertain = crosses(before + margin);
    });
    b.sync();
}

} // namespace bitnet::kernels::cuda
