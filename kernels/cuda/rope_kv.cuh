// RoPE on a fused Q/K/V projection's rows and the KV write of the rotated K and of V into the
// paged pool, in one launch (rope_kv_args): what rope.cuh does to q and to k, then kv_append, were
// three launches and a round trip of k through memory.
//
// Fidelity: the unfused chain's bits. One thread per item of a row: a rotated pair of q (read
// both, write both in place, as rope.cuh), one element of K (rotated with rope.cuh's expression
// for that side of its pair, or left alone past the pairs of an odd head_dim, then f32_to_f16),
// or one element of V (f32_to_f16). k is never written, so no thread reads what another writes.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/cuda/rounded_math.hpp"
#include "kernels/f16.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct rope_kv_kernel {
    using args = rope_kv_args;
    static constexpr unsigned threads = 128;

    /// Items of one row: q's pairs, then K's elements, then V's.
    static BITNET_HOST_DEVICE std::uint64_t items(const args& a) {
        const std::uint64_t n_kv = std::uint64_t{a.n_kv_head} * a.head_dim;
        return std::uint64_t{a.n_head} * (a.head_dim / 2) + 2 * n_kv;
    }

    /// The rotated value of element d of a head x (rope.cuh's expression for its side).
    static BITNET_DEVICE float rotated(const args& a, const float* x, const float* cs, unsigned d) {
        const unsigned half = a.head_dim / 2;
        if (d >= 2 * half)
            return x[d]; // an odd head_dim's last element: not rotated
        const bool first = a.neox ? d < half : d % 2 == 0;
        const unsigned i = a.neox ? (first ? d : d - half) : d / 2;
        const unsigned i0 = a.neox ? i : 2 * i;
        const unsigned i1 = a.neox ? i + half : 2 * i + 1;
        const float c = cs[i];
        const float s = cs[half + i];
        const float x0 = x[i0];
        const float x1 = x[i1];
        return first ? sub_rn(mul_rn(x0, c), mul_rn(x1, s)) : add_rn(mul_rn(x0, s), mul_rn(x1, c));
    }

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned r = b.y();
        const unsigned hd = a.head_dim;
        const unsigned half = hd / 2;
        const std::uint64_t q_items = std::uint64_t{a.n_head} * half;
        const std::uint64_t n_kv = std::uint64_t{a.n_kv_head} * hd;
        const std::size_t row = static_cast<std::size_t>(r) * a.ld;
        const float* cs = a.cos_sin + static_cast<std::size_t>(a.pos[r]) * hd;
        b.threads([&](unsigned t) {
            std::uint64_t k = static_cast<std::uint64_t>(b.x()) * b.size() + t;
            if (k < q_items) {
                float* v = a.q + row + static_cast<std::size_t>(k / half) * hd;
                const auto i = static_cast<unsigned>(k % half);
                const unsigned i0 = a.neox ? i : 2 * i;
                const unsigned i1 = a.neox ? i + half : 2 * i + 1;
                const float c = cs[i];
                const float s = cs[half + i];
                const float x0 = v[i0];
                const float x1 = v[i1];
                v[i0] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
                v[i1] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
                return;
            }
            k -= q_items;
            if (k < n_kv) {
                const float* head = a.k + row + static_cast<std::size_t>(k / hd) * hd;
                a.pool[a.k_dst[r] + k] = f32_to_f16(rotated(a, head, cs, k % hd));
                return;
            }
            k -= n_kv;
            if (k < n_kv)
                a.pool[a.v_dst[r] + k] = f32_to_f16(a.v[row + k]);
        });
    }
};

template <class Launcher>
void launch(const rope_kv_args& a, Launcher& l) {
    const std::uint64_t items = rope_kv_kernel::items(a);
    if (a.n_rows == 0 || items == 0)
        return; // a launch of zero blocks is an error on the device
    const std::uint64_t blocks = (items + rope_kv_kernel::threads - 1) / rope_kv_kernel::threads;
    if (blocks > 0x7fffffffu || a.n_rows > 65535u)
        throw std::invalid_argument("rope_kv: too many heads or rows for one launch");
    l.template run<rope_kv_kernel>(
        launch_shape{static_cast<unsigned>(blocks), a.n_rows, rope_kv_kernel::threads}, a);
}

} // namespace bitnet::kernels::cuda
