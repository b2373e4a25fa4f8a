// The fused CUDA kernels against their unfused twins and the CPU, through the ops interface: the
// split-K ternary GEMM (with stacked segments and the residual add in its epilogue) against the
// CPU's ternary product on random ragged shapes, norm_quantize against rms_norm + quantize (and
// relu_sqr_gate before them), rope_kv against rope + rope + kv_append, embed against the CPU's
// F16 rows. Bit for bit everywhere: every one of them is integer or the CPU's rounded operations.
// The same checks run on the simulated grid (cuda_fused_sim_test.cpp) and on a device (tests/gpu).
#pragma once

#include "cuda_kernel_checks.hpp"
#include "kernels/activation.hpp"
#include "kernels/cuda/ternary_gemm.cuh"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace bitnet::test::cuda {

// ---- split-K ternary GEMM, segments, accumulate -----------------------------------------------

struct stacked_shape {
    std::vector<std::uint32_t> rows; ///< one to three matrices stacked (segments)
    std::uint32_t cols;
    std::uint32_t n_tok;
};
/// Token counts past the GEMV (9..70, off the 16-token tiles), rows off the 64-row tiles, K from
/// one chunk (no split possible) to the 2B model's FFN width; stacked like Q/K/V and gate/up.
inline const std::vector<stacked_shape> stacked_shapes = {
    {{130}, 1280, 17},       {{70, 33, 40}, 384, 9}, {{200}, 2560, 31}, {{5}, 128, 64},
    {{64, 64}, 6912, 16},    {{1, 2, 3}, 640, 70},   {{129}, 256, 12},  {{77, 13}, 1024, 1},
    {{40, 20, 20}, 2560, 5}, {{300}, 896, 48},
};

/// A split product's workspace on `o`: zeros, as launch() requires between launches.
struct split_workspace {
    device_vector<std::int32_t> sums;
    device_vector<std::uint32_t> counters;
    std::uint32_t tiles;
    split_workspace(kc::ops& o, std::uint32_t rows, std::uint32_t n_tok)
        : sums(o, kc::ternary_split_workspace_for(rows, n_tok).sums)
        , counters(o, kc::ternary_split_workspace_for(rows, n_tok).tiles)
        , tiles(kc::ternary_split_workspace_for(rows, n_tok).tiles) {}
};

/// Stacked matrices with their own scales and multipliers, optionally added onto y; run twice
/// (the second launch must find the workspace zeroed by the first). Returns the splits used.
inline std::uint32_t check_stacked_gemm(kc::ops& o, const stacked_shape& s, std::uint32_t seed,
                                        bool accumulate) {
    CAPTURE(s.cols);
    CAPTURE(s.n_tok);
    CAPTURE(s.rows.size());
    CAPTURE(accumulate);
    std::uint32_t total = 0;
    for (auto r : s.rows)
        total += r;
    CAPTURE(total);
    const std::vector<float> x = random_floats(std::size_t{s.n_tok} * s.cols, seed, -3.0f, 3.0f);
    kernels::quantized_acts acts;
    kernels::quantize_activations(x.data(), s.n_tok, s.cols, s.cols, acts, kernels::isa::scalar);
    const std::size_t ldy = total + 3;
    const std::vector<float> y0 = random_floats(s.n_tok * ldy, seed + 1, -1.0f, 1.0f);
    std::vector<float> expect = y0;
    std::vector<std::uint8_t> gpu;
    kc::ternary_gemm_args a;
    std::uint32_t first = 0;
    for (std::size_t i = 0; i < s.rows.size(); ++i) {
        const ternary_shape part{s.rows[i], s.cols, s.n_tok};
        const std::vector<std::uint8_t> i2s = random_i2s(part.rows, s.cols, seed + 10 + i);
        const float w_scale = 0.01f + 0.003f * static_cast<float>(i + seed % 5);
        const float mult = i == 1 ? 1.0f : 0.5f + 0.25f * static_cast<float>(i);
        const auto y = cpu_bitlinear(i2s, part, w_scale, acts, part.rows, mult);
        for (std::uint32_t t = 0; t < s.n_tok; ++t)
            for (std::uint32_t m = 0; m < part.rows; ++m) {
                float& e = expect[t * ldy + first + m];
                e = accumulate ? e + y[t * part.rows + m] : y[t * part.rows + m];
            }
        const auto packed = kc::pack_ternary_gpu(i2s.data(), part.rows, s.cols);
        gpu.insert(gpu.end(), packed.begin(), packed.end());
        if (i == 0) {
            a.w_scale = w_scale;
            a.out_multiplier = mult;
        } else {
            a.seg_begin[i - 1] = first;
            a.seg_scale[i - 1] = w_scale;
            a.seg_mult[i - 1] = mult;
        }
        first += part.rows;
    }
    device_vector<std::uint8_t> dw(o, gpu);
    device_vector<std::int8_t> dq(o, acts.q);
    device_vector<float> dscale(o, acts.scale);
    device_vector<float> dy(o, y0);
    split_workspace ws(o, total, s.n_tok);
    a.w = dw.get();
    a.rows = total;
    a.cols = s.cols;
    a.q = dq.get();
    a.ldq = s.cols;
    a.act_scale = dscale.get();
    a.n_rows = s.n_tok;
    a.y = dy.get();
    a.ldy = static_cast<std::uint32_t>(ldy);
    a.accumulate = accumulate;
    a.split_sums = ws.sums.get();
    a.split_counters = ws.counters.get();
    a.split_tiles = ws.tiles;
    for (int run = 0; run < 2; ++run) {
        CAPTURE(run);
        if (run == 1)
            o.upload(dy.get(), y0.data(), y0.size() * sizeof(float));
        o.run(a);
        CHECK(first_bit_difference(dy.download(), expect) == -1);
        // The last block of every tile left the workspace as it found it.
        const auto sums = ws.sums.download();
        const auto counters = ws.counters.download();
        CHECK(std::all_of(sums.begin(), sums.end(), [](std::int32_t v) { return v == 0; }));
        CHECK(
            std::all_of(counters.begin(), counters.end(), [](std::uint32_t v) { return v == 0; }));
    }
    return kc::ternary_splits_for(total, s.cols, s.n_tok);
}

/// Every stacked shape, stored and accumulated; some shapes must have split.
inline void check_stacked_gemm_table(kc::ops& o) {
    std::uint32_t seed = 400;
    std::uint32_t split_shapes = 0;
    for (const auto& s : stacked_shapes) {
        const std::uint32_t splits = check_stacked_gemm(o, s, seed += 3, false);
        (void)check_stacked_gemm(o, s, seed += 3, true);
        split_shapes += splits > 1 ? 1 : 0;
    }
    CHECK(split_shapes >= 5);
}

// ---- norm_quantize against rms_norm + quantize (+ relu_sqr_gate) -------------------------------

struct quantized_rows {
    std::vector<std::int8_t> q;
    std::vector<float> scale;
};

/// `n_rows` rows of n: the unfused chain (relu_sqr_gate when `gate`, rms_norm when `norm`, then
/// quantize) and norm_quantize, on the same device buffers.
inline void check_norm_quantize(kc::ops& o, std::uint32_t n_rows, std::uint32_t n, bool gate,
                                bool norm, std::uint32_t seed) {
    CAPTURE(n_rows);
    CAPTURE(n);
    CAPTURE(gate);
    CAPTURE(norm);
    const std::uint32_t ld = n + 5;
    const std::uint32_t ldq = (n + 15) / 16 * 16;
    std::vector<float> x = random_floats(std::size_t{n_rows} * ld, seed, -3.0f, 3.0f);
    if (n_rows > 1) // a row of zeros: the 1e-5 floor of the scale, and the norm's eps
        std::fill(x.begin() + ld, x.begin() + ld + n, 0.0f);
    const std::vector<float> u = random_floats(std::size_t{n_rows} * ld, seed + 1, -2.0f, 2.0f);
    const std::vector<float> w = random_floats(n, seed + 2, 0.5f, 1.5f);
    device_vector<float> dx(o, x);
    device_vector<float> du(o, u);
    device_vector<float> dw(o, w);
    device_vector<float> dtmp(o, std::size_t{n_rows} * ld);
    device_vector<float> dnormed(o, std::size_t{n_rows} * n);

    auto quantized = [&](const float* in, std::uint32_t ld_in) {
        device_vector<std::int8_t> dq(o, std::size_t{n_rows} * ldq);
        device_vector<float> ds(o, std::vector<float>(n_rows, sentinel));
        kc::quantize_args qa;
        qa.x = in;
        qa.ldx = ld_in;
        qa.n_rows = n_rows;
        qa.k = n;
        qa.q = dq.get();
        qa.ldq = ldq;
        qa.scale = ds.get();
        o.run(qa);
        return quantized_rows{dq.download(), ds.download()};
    };
    const float* in = dx.get();
    std::uint32_t ld_in = ld;
    if (gate) {
        o.upload(dtmp.get(), x.data(), x.size() * sizeof(float));
        kc::relu_sqr_gate_args g;
        g.g = dtmp.get();
        g.u = du.get();
        g.z = dtmp.get();
        g.n = std::uint64_t{n_rows} * ld;
        o.run(g);
        in = dtmp.get();
    }
    if (norm) {
        kc::rms_norm_args r;
        r.x = in;
        r.ldx = ld_in;
        r.weight = dw.get();
        r.y = dnormed.get();
        r.ldy = n;
        r.n_rows = n_rows;
        r.n = n;
        r.eps = 1e-5f;
        o.run(r);
        in = dnormed.get();
        ld_in = n;
    }
    const quantized_rows want = quantized(in, ld_in);

    device_vector<std::int8_t> dq(o, std::size_t{n_rows} * ldq);
    device_vector<float> ds(o, std::vector<float>(n_rows, sentinel));
    kc::norm_quantize_args a;
    a.x = dx.get();
    a.ldx = ld;
    a.u = gate ? du.get() : nullptr;
    a.ldu = ld;
    a.weight = norm ? dw.get() : nullptr;
    a.eps = 1e-5f;
    a.n_rows = n_rows;
    a.n = n;
    a.q = dq.get();
    a.ldq = ldq;
    a.scale = ds.get();
    o.run(a);
    CHECK(first_byte_difference(dq.download(), want.q) == -1);
    CHECK(first_bit_difference(ds.download(), want.scale) == -1);
}

inline void check_norm_quantize_table(kc::ops& o) {
    std::uint32_t seed = 900;
    for (const auto& [rows, n] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{
             {1, 1}, {3, 100}, {2, 256}, {5, 777}, {4, 2560}, {2, 6912}})
        for (const bool gate : {false, true})
            for (const bool norm : {false, true})
                check_norm_quantize(o, rows, n, gate, norm, seed += 3);
}

// ---- rope_kv against rope (q), rope (k), kv_append --------------------------------------------

inline void check_rope_kv(kc::ops& o, std::uint32_t n_head, std::uint32_t n_kv_head,
                          std::uint32_t head_dim, bool neox, std::uint32_t seed) {
    CAPTURE(n_head);
    CAPTURE(n_kv_head);
    CAPTURE(head_dim);
    CAPTURE(neox);
    const std::uint32_t n_rows = 5;
    const std::uint32_t n_q = n_head * head_dim;
    const std::uint32_t n_kv = n_kv_head * head_dim;
    const std::uint32_t ld = n_q + 2 * n_kv + 3; // one fused Q/K/V row, padded
    const std::uint32_t n_pos = 40;
    const std::vector<float> qkv = random_floats(std::size_t{n_rows} * ld, seed, -2.0f, 2.0f);
    std::vector<float> table = random_floats(std::size_t{n_pos} * head_dim, seed + 1, -1.0f, 1.0f);
    const std::vector<std::int32_t> pos = {0, 39, 7, 7, 21};
    std::vector<std::uint64_t> k_dst, v_dst;
    for (std::uint32_t r = 0; r < n_rows; ++r) {
        k_dst.push_back(std::uint64_t{2 * (n_rows - 1 - r)} * n_kv + 3);
        v_dst.push_back(std::uint64_t{2 * r + 1} * n_kv + 5);
    }
    const std::size_t pool_size = std::size_t{2 * n_rows + 1} * n_kv + 8;

    // Unfused: rope on q and on k (in place, on their own copies), then kv_append.
    device_vector<float> dqkv_a(o, qkv);
    device_vector<float> dtable(o, table);
    device_vector<std::int32_t> dpos(o, pos);
    device_vector<std::uint64_t> dk(o, k_dst);
    device_vector<std::uint64_t> dv(o, v_dst);
    device_vector<std::uint16_t> pool_a(o, std::vector<std::uint16_t>(pool_size, 0xabcd));
    kc::rope_args r;
    r.n_rows = n_rows;
    r.head_dim = head_dim;
    r.neox = neox;
    r.cos_sin = dtable.get();
    r.pos = dpos.get();
    r.x = dqkv_a.get();
    r.ldx = ld;
    r.n_heads = n_head;
    o.run(r);
    r.x = dqkv_a.get() + n_q;
    r.n_heads = n_kv_head;
    o.run(r);
    kc::kv_append_args kv;
    kv.k = dqkv_a.get() + n_q;
    kv.v = dqkv_a.get() + n_q + n_kv;
    kv.ld = ld;
    kv.n_rows = n_rows;
    kv.n_kv = n_kv;
    kv.pool = pool_a.get();
    kv.k_dst = dk.get();
    kv.v_dst = dv.get();
    o.run(kv);
    const std::vector<float> q_want = dqkv_a.download();

    device_vector<float> dqkv_b(o, qkv);
    device_vector<std::uint16_t> pool_b(o, std::vector<std::uint16_t>(pool_size, 0xabcd));
    kc::rope_kv_args a;
    a.q = dqkv_b.get();
    a.k = dqkv_b.get() + n_q;
    a.v = dqkv_b.get() + n_q + n_kv;
    a.ld = ld;
    a.n_rows = n_rows;
    a.n_head = n_head;
    a.n_kv_head = n_kv_head;
    a.head_dim = head_dim;
    a.neox = neox;
    a.cos_sin = dtable.get();
    a.pos = dpos.get();
    a.pool = pool_b.get();
    a.k_dst = dk.get();
    a.v_dst = dv.get();
    o.run(a);
    const std::vector<float> q_got = dqkv_b.download();
    // q rotated the same; k and v left as they were (the unfused chain rotated k in place).
    for (std::uint32_t t = 0; t < n_rows; ++t) {
        CAPTURE(t);
        const auto at = [&](const std::vector<float>& v, std::uint32_t from, std::uint32_t n) {
            return std::vector<float>(v.begin() + t * ld + from, v.begin() + t * ld + from + n);
        };
        CHECK(first_bit_difference(at(q_got, 0, n_q), at(q_want, 0, n_q)) == -1);
        CHECK(first_bit_difference(at(q_got, n_q, 2 * n_kv), at(qkv, n_q, 2 * n_kv)) == -1);
    }
    CHECK(pool_b.download() == pool_a.download());
}

inline void check_rope_kv_table(kc::ops& o) {
    std::uint32_t seed = 1300;
    check_rope_kv(o, 4, 2, 16, true, ++seed);
    check_rope_kv(o, 4, 2, 16, false, ++seed);
    check_rope_kv(o, 20, 5, 128, true, ++seed); // the 2B model's heads
    check_rope_kv(o, 3, 1, 7, true, ++seed);    // an odd head_dim: its last element not rotated
    check_rope_kv(o, 3, 3, 9, false, ++seed);
}

// ---- embed ------------------------------------------------------------------------------------

inline void check_embed(kc::ops& o) {
    for (const std::uint32_t n_embd : {1u, 255u, 256u, 2560u}) {
        CAPTURE(n_embd);
        const std::uint32_t n_vocab = 37;
        const std::vector<float> f = random_floats(std::size_t{n_vocab} * n_embd, n_embd, -4, 4);
        std::vector<std::uint16_t> table(f.size());
        for (std::size_t i = 0; i < f.size(); ++i)
            table[i] = kernels::f32_to_f16(f[i]);
        table[0] = 0x7c00; // +inf, and a subnormal: exact both ways
        table[table.size() - 1] = 0x0001;
        const std::vector<std::int32_t> tokens = {36, 0, 5, 5, 17};
        const std::uint32_t ldx = n_embd + 4;
        std::vector<float> want(tokens.size() * ldx, sentinel);
        for (std::size_t r = 0; r < tokens.size(); ++r)
            for (std::uint32_t k = 0; k < n_embd; ++k)
                want[r * ldx + k] = kernels::f16_to_f32(table[std::size_t(tokens[r]) * n_embd + k]);
        device_vector<std::uint16_t> dt(o, table);
        device_vector<std::int32_t> dtok(o, tokens);
        device_vector<float> dx(o, std::vector<float>(want.size(), sentinel));
        kc::embed_args a;
        a.table = dt.get();
        a.n_embd = n_embd;
        a.tokens = dtok.get();
        a.n_rows = static_cast<std::uint32_t>(tokens.size());
        a.x = dx.get();
        a.ldx = ldx;
        o.run(a);
        CHECK(first_bit_difference(dx.download(), want) == -1);
    }
}

} // namespace bitnet::test::cuda
