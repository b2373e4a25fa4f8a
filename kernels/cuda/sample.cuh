// Sampling on the device, one block per row (sample_args): the CPU sampler's chain
// (model/sampling/sampler.cpp) with its arithmetic, so that a row gives the token and logprob
// model::sampler gives for the same logits, settings and draw, and only token ids (and logprobs)
// cross to the host. In order:
//   0. a copy of the row with the logit bias, the repetition penalty (llama.cpp's: divide a
//      positive logit, multiply a negative one, once per distinct token of the window), then
//      OpenAI's presence and frequency penalties (sample_row_params; the CPU sampler has only the
//      repetition penalty, so with the other two at 0 and no bias the chain is the CPU's);
//   1. NaN check (the lowest NaN id) and the first maximum (equal logits: lowest id), whose value
//      must be finite (log_normalizer's refusals);
//   2. greedy (temperature 0): the first maximum;
//   3. otherwise the candidates in the CPU's order (by logit, then id: a bitonic sort of 64-bit
//      keys) when a filter needs the order, top-k, top-p over exp(z - max) / mass in that order,
//      min-p against max + logf(min_p), then a draw from exp((z - max) / T) with the host's
//      uniform;
//   4. the logprob: z[token] - (max + log Σ exp(z - max)), rounded to float.
// Exactness: maxima, sorts and counts do not depend on order. The sums (top-p's mass and running
// sum, the draw's total and running sum, the log-normaliser) are taken in the block's order and
// decide as the CPU's in-order sums would whenever the block's values clear the decision by more
// than the two orders can differ (block_scan.cuh); otherwise one thread redoes the CPU's loop.
// On the simulated grid the exp and log are glibc's, so the result is the CPU's bit for bit
// (tested against model::sampler). On a device they are CUDA's (within 1 ulp in double; logf in
// min-p within 1 ulp): a token whose logit sits exactly at a min-p threshold or a draw that lands
// within 1e-15 of a boundary may go the other way, as attention's expf (kv_attention.cuh).
#pragma once

#include "kernels/cuda/block_scan.cuh"
#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct sample_kernel {
    using args = sample_args;
    static constexpr unsigned threads = 512;
    static_assert(threads <= scan_max_threads, "the helpers' shared memory has a slot per thread");

    struct state {
        scan_shared scan;
        std::uint64_t best[scan_max_threads]; ///< per thread: the largest (logit, -id) key
        std::uint32_t nan_first[scan_max_threads];
        std::uint32_t argmax;
        float z_max;
        std::int32_t status;
        std::int32_t detail;
        double log_sum;
        std::uint32_t n_keep;
        std::uint32_t pick;
    };

    static BITNET_DEVICE double exp_of(double v) {
#if defined(__CUDACC__)
        return ::exp(v);
#else
        return std::exp(v);
#endif
    }
    static BITNET_DEVICE double log_of(double v) {
#if defined(__CUDACC__)
        return ::log(v);
#else
        return std::log(v);
#endif
    }
    static BITNET_DEVICE float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
        return __fdiv_rn(a, b);
#else
        return a / b;
#endif
    }

    /// 0. z = the row, then bias and penalties on the listed tokens (distinct: no two threads
    /// write one element).
    static BITNET_DEVICE void adjust_row(const block& b, const args& a, const sample_row_params& p,
                                         const float* src, float* z) {
        const std::uint32_t n = a.n_vocab;
        b.threads([&](unsigned t) {
            for (std::uint32_t i = t; i < n; i += b.size())
                z[i] = src[i];
        });
        b.sync();
        b.threads([&](unsigned t) {
            for (std::uint32_t e = p.adjust_begin + t; e < p.adjust_end; e += b.size()) {
                const sample_adjust& d = a.adjust[e];
                if (d.token < 0 || static_cast<std::uint32_t>(d.token) >= n)
                    continue;
                float v = z[d.token];
                if (d.bias != 0.0f)
                    v = add_rn(v, d.bias);
                if (d.in_window != 0 && p.repetition_penalty != 1.0f)
                    v = v > 0.0f ? div_rn(v, p.repetition_penalty)
                                 : mul_rn(v, p.repetition_penalty);
                if (d.count > 0 && (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f))
                    v = sub_rn(v, add_rn(mul_rn(static_cast<float>(d.count), p.frequency_penalty),
                                         p.presence_penalty));
                z[d.token] = v;
            }
        });
        b.sync();
    }

    /// 1. The lowest NaN id, the first maximum and its value; status when the row cannot sample.
    static BITNET_DEVICE void find_max(const block& b, const args& a, const float* z, state& s) {
        const std::uint32_t n = a.n_vocab;
        b.threads([&](unsigned t) {
            std::uint64_t best = 0;
            std::uint32_t nan_first = n;
            for (std::uint32_t i = t; i < n; i += b.size()) {
                if (z[i] != z[i]) {
                    nan_first = i < nan_first ? i : nan_first;
                    continue;
                }
                const std::uint64_t key =
                    (static_cast<std::uint64_t>(ordered_bits(z[i])) << 32) | (0xffffffffu - i);
                best = key > best ? key : best;
            }
            s.best[t] = best;
            s.nan_first[t] = nan_first;
        });
        b.sync();
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            std::uint64_t best = 0;
            std::uint32_t nan_first = n;
            for (unsigned w = 0; w < b.size(); ++w) {
                best = s.best[w] > best ? s.best[w] : best;
                nan_first = s.nan_first[w] < nan_first ? s.nan_first[w] : nan_first;
            }
            s.argmax = 0xffffffffu - static_cast<std::uint32_t>(best & 0xffffffffu);
            s.status = 0;
            s.detail = 0;
            if (nan_first < n) {
                s.status = 1;
                s.detail = static_cast<std::int32_t>(nan_first);
                return;
            }
            s.z_max = z[s.argmax];
            if (!(s.z_max - s.z_max == 0.0f)) // ±inf (no finite maximum)
                s.status = 2;
        });
        b.sync();
    }

    /// Candidate i of the order (sorted keys when a filter needed the order, else id i).
    static BITNET_DEVICE std::uint32_t order_at(const std::uint64_t* keys, bool sorted,
                                                std::uint32_t i) {
        return sorted ? static_cast<std::uint32_t>(keys[i] & 0xffffffffu) : i;
    }

    /// 3. top-p over the first n_keep candidates: s.n_keep cut after the first whose running sum
    /// of exp(z - max) / mass reaches top_p (filter_candidates' loop).
    static BITNET_DEVICE void top_p(const block& b, const sample_row_params& p, const float* z,
                                    const std::uint64_t* keys, state& s) {
        const double z_max = s.z_max;
        auto e = [&](std::uint32_t i) {
            return exp_of(static_cast<double>(z[order_at(keys, true, i)]) - z_max);
        };
        const std::uint32_t n_keep = s.n_keep;
        block_sum(b, n_keep, e, s.scan);
        const double mass = s.scan.total;
        const double margin = 4.0 * running_sum_tolerance(n_keep, b.size()) * 2.0;
        block_first_crossing(
            b, n_keep, [&](std::uint32_t i) { return e(i) / mass; }, static_cast<double>(p.top_p),
            false, margin, s.scan);
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            if (!s.scan.uncertain) {
                if (s.scan.index < n_keep)
                    s.n_keep = s.scan.index + 1;
                return;
            }
            double m = 0.0; // the CPU's loop, on one thread
            for (std::uint32_t i = 0; i < n_keep; ++i)
                m += e(i);
            double cum = 0.0;
            for (std::uint32_t i = 0; i < n_keep; ++i) {
                cum += e(i) / m;
                if (cum >= static_cast<double>(p.top_p)) {
                    s.n_keep = i + 1;
                    break;
                }
            }
        });
        b.sync();
    }

    /// min-p: the candidates from the second on whose logit is at least max + log(min_p)
    /// (sorted, so they are a prefix: the CPU's while loop keeps exactly them).
    static BITNET_DEVICE void min_p(const block& b, const sample_row_params& p, const float* z,
                                    const std::uint64_t* keys, state& s) {
#if defined(__CUDACC__)
        const float log_min_p = logf(p.min_p);
#else
        const float log_min_p = std::log(p.min_p);
#endif
        const double threshold =
            static_cast<double>(z[order_at(keys, true, 0)]) + static_cast<double>(log_min_p);
        const std::uint32_t n_keep = s.n_keep;
        block_sum(
            b, n_keep,
            [&](std::uint32_t i) {
                return i > 0 && static_cast<double>(z[order_at(keys, true, i)]) >= threshold ? 1.0
                                                                                             : 0.0;
            },
            s.scan);
        b.threads([&](unsigned t) {
            if (t == 0)
                s.n_keep = 1 + static_cast<std::uint32_t>(s.scan.total);
        });
        b.sync();
    }

    /// The draw over the first n_keep candidates (draw_candidate): s.pick.
    static BITNET_DEVICE void draw(const block& b, const sample_row_params& p, const float* z,
                                   const std::uint64_t* keys, bool sorted, state& s) {
        const double z_max = s.z_max;
        const double inv_t = 1.0 / static_cast<double>(p.temperature);
        auto w = [&](std::uint32_t i) {
            return exp_of((static_cast<double>(z[order_at(keys, sorted, i)]) - z_max) * inv_t);
        };
        const std::uint32_t n_keep = s.n_keep;
        block_sum(b, n_keep, w, s.scan);
        const double total = s.scan.total;
        const double margin = 4.0 * running_sum_tolerance(n_keep, b.size()) * total;
        block_first_crossing(b, n_keep, w, p.uniform * total, true, margin, s.scan);
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            if (!s.scan.uncertain) {
                s.pick = s.scan.index < n_keep ? s.scan.index : n_keep - 1;
                return;
            }
            double sum = 0.0; // the CPU's loop, on one thread
            for (std::uint32_t i = 0; i < n_keep; ++i)
                sum += w(i);
            const double u = p.uniform * sum;
            double cum = 0.0;
            s.pick = n_keep - 1;
            for (std::uint32_t i = 0; i < n_keep; ++i) {
                cum += w(i);
                if (u < cum) {
                    s.pick = i;
                    break;
                }
            }
        });
        b.sync();
    }

    /// 3. The non-greedy chain; returns the token.
    static BITNET_DEVICE std::uint32_t sample_token(const block& b, const args& a,
                                                    const sample_row_params& p, const float* z,
                                                    std::uint64_t* keys, state& s) {
        const std::uint32_t n = a.n_vocab;
        const bool sorted = p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f;
        if (sorted) {
            b.threads([&](unsigned t) {
                for (std::uint32_t i = t; i < a.n_pow2; i += b.size())
                    keys[i] = i < n ? candidate_key(z[i], i) : ~std::uint64_t{0};
            });
            b.sync();
            block_bitonic_sort(b, keys, a.n_pow2);
        }
        b.threads([&](unsigned t) {
            if (t == 0)
                s.n_keep = p.top_k > 0 && static_cast<std::uint32_t>(p.top_k) < n
                               ? static_cast<std::uint32_t>(p.top_k)
                               : n;
        });
        b.sync();
        if (p.top_p < 1.0f)
            top_p(b, p, z, keys, s);
        if (p.min_p > 0.0f)
            min_p(b, p, z, keys, s);
        draw(b, p, z, keys, sorted, s);
        return order_at(keys, sorted, s.pick);
    }

    /// 4. The logprob of `token` (log_normalizer, then logprob_of), written with the result.
    static BITNET_DEVICE void finish(const block& b, const args& a, const sample_row_params& p,
                                     const float* z, std::uint32_t token, state& s) {
        const std::uint32_t n = a.n_vocab;
        if (p.want_logprob == 0) {
            b.threads([&](unsigned t) {
                if (t == 0)
                    a.out[b.x()] = {static_cast<std::int32_t>(token), 0.0f, 0, 0};
            });
            return;
        }
        const double z_max = s.z_max;
        auto e = [&](std::uint32_t i) { return exp_of(static_cast<double>(z[i]) - z_max); };
        block_sum(b, n, e, s.scan);
        b.threads([&](unsigned t) {
            if (t != 0)
                return;
            const double zt = static_cast<double>(z[token]);
            auto logprob = [&](double sum) {
                return static_cast<float>(zt - (z_max + log_of(sum)));
            };
            const double sum = s.scan.total;
            const double tol = running_sum_tolerance(n, b.size());
            float lp = logprob(sum);
            if (lp != logprob(sum * (1.0 - tol)) || lp != logprob(sum * (1.0 + tol))) {
                double seq = 0.0; // the CPU's order, on one thread
                for (std::uint32_t i = 0; i < n; ++i)
                    seq += e(i);
                lp = logprob(seq);
            }
            a.out[b.x()] = {static_cast<std::int32_t>(token), lp, 0, 0};
        });
    }

    static BITNET_DEVICE void body(const block& b, const args& a) {
        BITNET_SHARED state s;
        const unsigned r = b.x();
        const sample_row_params& p = a.params[r];
        const std::size_t src_row = a.logits_row != nullptr ? a.logits_row[r] : r;
        const float* src = a.logits + src_row * a.ldl;
        float* z = a.work + static_cast<std::size_t>(r) * a.n_vocab;
        std::uint64_t* keys = a.keys + static_cast<std::size_t>(r) * a.n_pow2;
        adjust_row(b, a, p, src, z);
        find_max(b, a, z, s);
        if (s.status != 0) {
            b.threads([&](unsigned t) {
                if (t == 0)
                    a.out[r] = {-1, 0.0f, s.status, s.detail};
            });
            return;
        }
        const std::uint32_t token =
            p.temperature == 0.0f ? s.argmax : sample_token(b, a, p, z, keys, s);
        finish(b, a, p, z, token, s);
    }
};

/// The next power of two at or above n (the sort's key count).
inline std::uint32_t sample_sort_size(std::uint32_t n) {
    std::uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

template <class Launcher>
void launch(const sample_args& a, Launcher& l) {
    if (a.n_rows == 0)
        return;
    if (a.n_vocab == 0 || a.n_pow2 < a.n_vocab || (a.n_pow2 & (a.n_pow2 - 1)) != 0)
        throw std::invalid_argument("sample: n_pow2 must be a power of two at least n_vocab");
    l.template run<sample_kernel>({a.n_rows, 1, sample_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
