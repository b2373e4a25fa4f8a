// The CUDA KV kernels of kernels/cuda/kv_attention.cuh against the CPU through the ops interface:
// kv_append against f32_to_f16 element by element, paged_attention against kernels::
// attention_one_token, with GQA, several block sizes, ragged contexts and several rows with
// their own block tables in one launch, probabilities rounded to F16 and not. The same checks run
// on the simulated grid (cuda_kv_attention_sim_test.cpp) and on a real device (tests/gpu/).
//
// Fidelity: kv_append is bit for bit everywhere. paged_attention is bit for bit on the simulated
// grid (`exact`: its expf is the host's glibc expf, the CPU's), while on a device expf is CUDA's
// (within 2 ulps of glibc's), so there the output is held to device_tolerance instead (the
// derivation is in kv_attention.cuh's comment on paged_attention_kernel). The simulated run is
// held to that tolerance too, so the bound itself is exercised in every build.
#pragma once

#include "cuda_sim_util.hpp"
#include "kernel_test_util.hpp"
#include "kernels/attention.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/f16.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace bitnet::test::cuda {

namespace kc = bitnet::kernels::cuda;

// ---- kv_append --------------------------------------------------------------------------------

/// Each K/V width: one element, around the 128-thread blocks, the 2B model's 640.
inline void check_kv_append_table(kc::ops& o) {
    const std::uint32_t n_rows = 5;
    for (const std::uint32_t n_kv : {1u, 127u, 128u, 129u, 640u}) {
        CAPTURE(n_kv);
        const std::uint32_t ld = n_kv + 3;
        std::vector<float> k = random_floats(std::size_t{n_rows} * ld, n_kv, -3.0f, 3.0f);
        const std::vector<float> v =
            random_floats(std::size_t{n_rows} * ld, n_kv + 1, -1e-6f, 1e-6f);
        if (n_kv >= 8) { // F16's edges: overflow, infinities, NaN, subnormals, a tie
            k[0] = 70000.0f;
            k[1] = -std::numeric_limits<float>::infinity();
            k[2] = NAN;
            k[3] = 3e-8f;
            k[4] = 1.0f + 0x1p-11f;
            k[5] = -0.0f;
        }
        // Row r's K and V go to scattered, non-overlapping places in a larger pool.
        const std::size_t pool_size = std::size_t{4 * n_rows + 2} * n_kv;
        std::vector<std::uint64_t> k_dst, v_dst;
        for (std::uint32_t r = 0; r < n_rows; ++r) {
            k_dst.push_back(std::uint64_t{4 * (n_rows - 1 - r) + 1} * n_kv);
            v_dst.push_back(std::uint64_t{4 * r + 3} * n_kv + 1);
        }
        std::vector<std::uint16_t> want(pool_size, 0xabcd);
        for (std::uint32_t r = 0; r < n_rows; ++r)
            for (std::uint32_t i = 0; i < n_kv; ++i) {
                want[k_dst[r] + i] = kernels::f32_to_f16(k[std::size_t{r} * ld + i]);
                want[v_dst[r] + i] = kernels::f32_to_f16(v[std::size_t{r} * ld + i]);
            }

        device_vector<float> dk(o, k);
        device_vector<float> dv(o, v);
        device_vector<std::uint16_t> dpool(o, std::vector<std::uint16_t>(pool_size, 0xabcd));
        device_vector<std::uint64_t> dk_dst(o, k_dst);
        device_vector<std::uint64_t> dv_dst(o, v_dst);
        kc::kv_append_args a;
        a.k = dk.get();
        a.v = dv.get();
        a.ld = ld;
        a.n_rows = n_rows;
        a.n_kv = n_kv;
        a.pool = dpool.get();
        a.k_dst = dk_dst.get();
        a.v_dst = dv_dst.get();
        o.run(a);
        CHECK(dpool.download() == want); // untouched halves keep their 0xabcd
    }
}

// ---- paged_attention --------------------------------------------------------------------------

/// A pool of F16 tiles with each row's blocks scattered through it, and the CPU's view of them.
struct paged_pool {
    std::vector<std::uint16_t> halves;
    std::vector<std::uint64_t> k_tiles; ///< all rows' blocks, row t's from table[t]
    std::vector<std::uint64_t> v_tiles;
    std::vector<std::uint32_t> table;
    std::size_t tile_halves = 0;
};

inline paged_pool make_pool(const std::vector<std::uint32_t>& n_ctx, std::uint32_t block_tokens,
                            std::size_t tile_halves, std::uint32_t seed) {
    paged_pool p;
    p.tile_halves = tile_halves;
    std::uint32_t n_tiles = 0;
    for (const std::uint32_t n : n_ctx) {
        p.table.push_back(n_tiles / 2);
        n_tiles += 2 * ((n + block_tokens - 1) / block_tokens);
    }
    // Tiles handed out in a shuffled order, K and V interleaved, as a block allocator might.
    std::vector<std::uint64_t> slots(n_tiles);
    std::iota(slots.begin(), slots.end(), std::uint64_t{0});
    std::mt19937 rng(seed);
    std::shuffle(slots.begin(), slots.end(), rng);
    for (std::uint32_t i = 0; i < n_tiles / 2; ++i) {
        p.k_tiles.push_back(slots[2 * i] * tile_halves);
        p.v_tiles.push_back(slots[2 * i + 1] * tile_halves);
    }
    const std::vector<float> f = random_floats(n_tiles * tile_halves, seed + 1, -2.0f, 2.0f);
    p.halves.resize(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
        p.halves[i] = kernels::f32_to_f16(f[i]);
    return p;
}

/// The largest |V| element of the pool (V tiles only: the scale the outputs, convex combinations
/// of V rows, live on; K's values say nothing about it).
inline double max_abs_v(const paged_pool& p) {
    double v_max = 0.0;
    for (const std::uint64_t tile : p.v_tiles)
        for (std::size_t i = 0; i < p.tile_halves; ++i)
            v_max = std::max(
                v_max, static_cast<double>(std::fabs(kernels::f16_to_f32(p.halves[tile + i]))));
    return v_max;
}

/// The largest |got - want| over [begin, begin + count), divided by the largest |V| element.
inline double error_relative_to_v(const std::vector<float>& got, const std::vector<float>& want,
                                  std::size_t begin, std::size_t count, const paged_pool& p) {
    double err = 0.0;
    for (std::size_t i = begin; i < begin + count; ++i)
        err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    return err / max_abs_v(p);
}

/// What a GPU run is held to, where expf is CUDA's (within 2 ulps) rather than glibc's: the
/// probabilities move by a few float ulps, which moves the output by far less than 2^-16 of V's
/// scale; with probabilities rounded to F16 one may round to the neighbouring half instead, a
/// change of up to 2^-10 of itself (kv_attention.cuh).
inline double device_tolerance(bool round_probs) {
    return round_probs ? 0x1p-10 : 0x1p-16;
}

/// The paged_attention launch over a pool on `o` (allocated, uploaded, downloaded through it).
struct paged_attention_run {
    device_vector<float> dq;
    device_vector<float> dout;
    device_vector<std::uint16_t> dpool;
    device_vector<std::uint64_t> dk;
    device_vector<std::uint64_t> dv;
    device_vector<std::uint32_t> dtable;
    device_vector<std::uint32_t> dctx;
    device_vector<std::uint8_t> dround;
    device_vector<float> dscratch;
    kc::paged_attention_args a;

    /// round_probs empty: none rounded (a null pointer in the arguments).
    paged_attention_run(kc::ops& o, const paged_pool& pool, const std::vector<float>& q,
                        std::uint32_t ldq, std::uint32_t ldo,
                        const std::vector<std::uint32_t>& n_ctx,
                        const std::vector<std::uint8_t>& round_probs,
                        const kernels::attention_shape& shape, std::uint32_t block_tokens,
                        std::uint32_t max_ctx)
        : dq(o, q)
        , dout(o, n_ctx.size() * ldo)
        , dpool(o, pool.halves)
        , dk(o, pool.k_tiles)
        , dv(o, pool.v_tiles)
        , dtable(o, pool.table)
        , dctx(o, n_ctx)
        , dround(o, round_probs.empty() ? std::vector<std::uint8_t>{0} : round_probs)
        , dscratch(o, n_ctx.size() * shape.n_head * max_ctx) {
        a.q = dq.get();
        a.ldq = ldq;
        a.out = dout.get();
        a.ldo = ldo;
        a.n_rows = static_cast<std::uint32_t>(n_ctx.size());
        a.n_head = shape.n_head;
        a.n_kv_head = shape.n_kv_head;
        a.head_dim = shape.head_dim;
        a.scale = shape.scale;
        a.block_tokens = block_tokens;
        a.pool = dpool.get();
        a.k_tiles = dk.get();
        a.v_tiles = dv.get();
        a.table = dtable.get();
        a.n_ctx = dctx.get();
        a.round_probs = round_probs.empty() ? nullptr : dround.get();
        a.scratch = dscratch.get();
        a.max_ctx = max_ctx;
    }
};

struct attention_case {
    std::uint32_t n_head, n_kv_head, head_dim, block_tokens;
    std::vector<std::uint32_t> n_ctx; ///< one query row each
};

inline const std::vector<attention_case> attention_cases = {
    {4, 2, 64, 16, {1, 15, 16, 17, 100}},
    {20, 5, 128, 16, {37, 1, 64}},
    {8, 8, 16, 7, {1, 2, 50}},
    {3, 1, 40, 1, {9, 3}},         // head_dim not a multiple of 16: the CPU's scalar family
    {6, 3, 100, 32, {33, 130, 5}}, // more positions than the block has threads
    {2, 1, 256, 16, {17}},
    {4, 1, 128, 16, {1000, 999}},
};

/// Every case; bit for bit where `exact`, within device_tolerance always; the same bits from the
/// same launch twice everywhere (no order left to chance). Returns the worst error / max |V|.
inline double check_paged_attention_table(kc::ops& o, bool exact) {
    std::uint32_t seed = 700;
    double worst = 0.0;
    for (const attention_case& c : attention_cases) {
        CAPTURE(c.n_head);
        CAPTURE(c.n_kv_head);
        CAPTURE(c.head_dim);
        CAPTURE(c.block_tokens);
        const auto n_rows = static_cast<std::uint32_t>(c.n_ctx.size());
        const std::size_t row = std::size_t{c.n_kv_head} * c.head_dim;
        const paged_pool pool = make_pool(c.n_ctx, c.block_tokens, c.block_tokens * row, ++seed);
        const std::uint32_t q_width = c.n_head * c.head_dim;
        const std::uint32_t ldq = q_width + 5;
        const std::uint32_t ldo = q_width + 3;
        const std::vector<float> q = random_floats(std::size_t{n_rows} * ldq, ++seed, -2.0f, 2.0f);
        const std::uint32_t max_ctx = *std::max_element(c.n_ctx.begin(), c.n_ctx.end()) + 2;
        std::vector<std::uint8_t> round_probs(n_rows);
        for (std::uint32_t t = 0; t < n_rows; ++t)
            round_probs[t] = static_cast<std::uint8_t>((t + seed) % 2);

        // The CPU, row by row, over the same pool.
        std::vector<float> want(std::size_t{n_rows} * ldo, 0.0f);
        const kernels::attention_shape shape{c.n_head, c.n_kv_head, c.head_dim,
                                             1.0f / std::sqrt(static_cast<float>(c.head_dim))};
        kernels::attention_scratch scratch;
        for (std::uint32_t t = 0; t < n_rows; ++t) {
            const std::uint32_t n_blocks = (c.n_ctx[t] + c.block_tokens - 1) / c.block_tokens;
            std::vector<const std::uint16_t*> kb, vb;
            for (std::uint32_t i = 0; i < n_blocks; ++i) {
                kb.push_back(pool.halves.data() + pool.k_tiles[pool.table[t] + i]);
                vb.push_back(pool.halves.data() + pool.v_tiles[pool.table[t] + i]);
            }
            const kernels::paged_kv kv{kb.data(), vb.data(), c.block_tokens, c.n_ctx[t]};
            kernels::attention_one_token(q.data() + std::size_t{t} * ldq, shape, kv,
                                         round_probs[t] != 0, want.data() + std::size_t{t} * ldo,
                                         scratch);
        }

        paged_attention_run run(o, pool, q, ldq, ldo, c.n_ctx, round_probs, shape, c.block_tokens,
                                max_ctx);
        o.run(run.a);
        const std::vector<float> got = run.dout.download();
        if (exact)
            CHECK(first_bit_difference(got, want) == -1);

        // The same launch again: the same bits (no order left to chance).
        o.run(run.a);
        CHECK(first_bit_difference(run.dout.download(), got) == -1);

        for (std::uint32_t t = 0; t < n_rows; ++t) {
            CAPTURE(t);
            const double err = error_relative_to_v(got, want, std::size_t{t} * ldo, q_width, pool);
            CHECK(err <= device_tolerance(round_probs[t] != 0));
            worst = std::max(worst, err);
        }
    }
    return worst;
}

/// Scores 0, h1, h2, then 2045 times -38: in the CPU's order the sum of the exponentials is
/// exactly (1 + e^h1) + e^h2, every later e^-38 (< half an ulp of the sum) rounded away, while the
/// block adds the small ones among themselves first and keeps about 4e-14 of them. h1 and h2 were
/// found by search so that 1/sum lies 3.6e-15 (relative) above the midpoint between two floats:
/// the CPU's 1/sum rounds up, the block's would round down. The search used glibc's expf, so
/// only where `exact` is the midpoint the device's; elsewhere the tolerance holds.
inline void check_paged_attention_cpu_order(kc::ops& o, bool exact) {
    const std::uint32_t n = 2048;
    const std::uint32_t head_dim = 16;
    const std::uint32_t block_tokens = 16;
    const std::uint16_t h1 = 0x9804; // -0.00196075
    const std::uint16_t h2 = 0xbbac; // -0.958984
    const double sum = (1.0 + static_cast<double>(expf(kernels::f16_to_f32(h1)))) +
                       static_cast<double>(expf(kernels::f16_to_f32(h2)));
    REQUIRE(static_cast<float>(1.0 / sum) != static_cast<float>(1.0 / (sum * (1.0 + 0x1p-44))));

    const std::vector<std::uint32_t> n_ctx = {n};
    paged_pool pool = make_pool(n_ctx, block_tokens, block_tokens * head_dim, 31);
    for (std::uint32_t p = 0; p < n; ++p) { // K row p = (score, 0, ..., 0)
        std::uint16_t* k =
            pool.halves.data() + pool.k_tiles[p / block_tokens] + (p % block_tokens) * head_dim;
        std::fill(k, k + head_dim, std::uint16_t{0});
        k[0] = p == 0 ? std::uint16_t{0} : p == 1 ? h1 : p == 2 ? h2 : kernels::f32_to_f16(-38.0f);
    }
    std::vector<float> q(head_dim, 0.0f);
    q[0] = 1.0f;

    const std::uint32_t n_blocks = n / block_tokens;
    std::vector<const std::uint16_t*> kb, vb;
    for (std::uint32_t i = 0; i < n_blocks; ++i) {
        kb.push_back(pool.halves.data() + pool.k_tiles[i]);
        vb.push_back(pool.halves.data() + pool.v_tiles[i]);
    }
    const kernels::paged_kv kv{kb.data(), vb.data(), block_tokens, n};
    std::vector<float> want(head_dim);
    kernels::attention_scratch scratch;
    const kernels::attention_shape shape{1, 1, head_dim, 1.0f};
    kernels::attention_one_token(q.data(), shape, kv, false, want.data(), scratch);

    paged_attention_run run(o, pool, q, head_dim, head_dim, n_ctx, {}, shape, block_tokens, n);
    o.run(run.a);
    const std::vector<float> got = run.dout.download();
    if (exact)
        CHECK(first_bit_difference(got, want) == -1);
    CHECK(error_relative_to_v(got, want, 0, head_dim, pool) <= device_tolerance(false));
}

} // namespace bitnet::test::cuda
