// cuda_engine's launch plans: the forward pass of docs/GGUF-FORMAT.md §3.4 as kernel launches
// recorded into a kernels::cuda::launch_plan, in the CPU engine's order and with its rounding
// points (each kernel's contract in kernels/cuda/kernel_args.hpp names the CPU kernel it matches).
// Every pointer is into a buffer allocated at load, and everything a step changes (tokens,
// positions, block tables, contexts, sampling settings) is read by the kernels from buffers too, so
// a plan recorded for one step is valid for any later step of the same shape (cuda_engine.hpp).
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/ternary_gemm.cuh"
#include "model/engine/cuda/cuda_engine.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::model {

namespace cuda = kernels::cuda;

// A norm (when `weight` holds one) and the int8 quantization of T rows of n into acts_q_ /
// acts_scale_, which every projection of that input reads; with `u`, x is the gate and the input
// is relu(x)² · u (the feed-forward's gate folded in).
void cuda_engine::record_norm_quantize(cuda::launch_plan& p, const float* x, std::uint32_t ld,
                                       const float* u, const device_memory& weight, std::uint32_t T,
                                       std::uint32_t n) const {
    cuda::norm_quantize_args a;
    a.x = x;
    a.ldx = ld;
    a.u = u;
    a.ldu = ld;
    a.weight = weight.bytes() > 0 ? weight.as<float>() : nullptr;
    a.eps = config_.rms_eps;
    a.n_rows = T;
    a.n = n;
    a.q = acts_q_.as<std::int8_t>();
    a.ldq = n;
    a.scale = acts_scale_.as<float>();
    p.add(a);
}

// One (stacked) BitLinear over acts_q_, into y [T][w.rows], or added onto y (the residual).
void cuda_engine::record_product(cuda::launch_plan& p, const device_projection& w, std::uint32_t T,
                                 float* y, bool accumulate) const {
    cuda::ternary_gemm_args a;
    a.w = w.w.as<std::uint8_t>();
    a.rows = w.rows;
    a.cols = w.cols;
    a.w_scale = w.scale;
    a.out_multiplier = w.out_multiplier;
    for (int i = 0; i < 2; ++i) {
        a.seg_begin[i] = w.seg_begin[i];
        a.seg_scale[i] = w.seg_scale[i];
        a.seg_mult[i] = w.seg_mult[i];
    }
    a.q = acts_q_.as<std::int8_t>();
    a.ldq = w.cols;
    a.act_scale = acts_scale_.as<float>();
    a.n_rows = T;
    a.y = y;
    a.ldy = w.rows;
    a.accumulate = accumulate;
    a.split_sums = split_sums_.as<std::int32_t>();
    a.split_counters = split_counters_.as<std::uint32_t>();
    a.split_tiles = cuda::ternary_gemm_tiled_kernel::fill_blocks;
    p.add(a);
}

// Norm+quantize, Q/K/V, RoPE+KV write, attention, (sub-norm+)quantize, output added to x.
void cuda_engine::record_attention(cuda::launch_plan& p, std::uint32_t l, std::uint32_t T) const {
    const model_config& c = config_;
    const std::uint32_t n_q = c.n_embd_q();
    const std::uint32_t n_kv = c.n_embd_kv();
    const std::uint32_t ld = n_q + 2 * n_kv; // one row of the stacked Q/K/V product
    const device_layer& L = layers_[l];
    auto* qkv = qkv_.as<float>();
    auto* attn = attn_.as<float>();

    record_norm_quantize(p, x_.as<float>(), c.n_embd, nullptr, L.attn_norm, T, c.n_embd);
    record_product(p, L.qkv, T, qkv, false);

    // One table of layer-0 offsets for every layer: the pool's base moves by the layer's offset.
    std::uint16_t* pool = kv_pool_.as<std::uint16_t>() + cache_.layer_offset(l);
    cuda::rope_kv_args r;
    r.q = qkv;
    r.k = qkv + n_q;
    r.v = qkv + n_q + n_kv;
    r.ld = ld;
    r.n_rows = T;
    r.n_head = c.n_head;
    r.n_kv_head = c.n_head_kv;
    r.head_dim = c.head_dim;
    r.neox = c.rope == rope_style::neox;
    r.cos_sin = rope_table_.as<float>();
    r.pos = pos_.d();
    r.pool = pool;
    r.k_dst = k_dst_.d();
    r.v_dst = v_dst_.d();
    p.add(r);

    for (const attention_group& g : groups_) {
        cuda::paged_attention_args a;
        a.q = qkv + std::size_t{g.begin} * ld;
        a.ldq = ld;
        a.out = attn + std::size_t{g.begin} * n_q;
        a.ldo = n_q;
        a.n_rows = g.end - g.begin;
        a.n_head = c.n_head;
        a.n_kv_head = c.n_head_kv;
        a.head_dim = c.head_dim;
        a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
        a.block_tokens = cache_.block_tokens();
        a.pool = pool;
        a.k_tiles = k_tiles_.d();
        a.v_tiles = v_tiles_.d();
        a.table = table_.d() + g.begin;
        a.n_ctx = n_ctx_.d() + g.begin;
        a.round_probs = round_.d() + g.begin;
        a.scratch = scratch_.as<float>();
        a.max_ctx = g.max_ctx;
        p.add(a);
    }

    record_norm_quantize(p, attn, n_q, nullptr, L.attn_sub_norm, T, n_q);
    record_product(p, L.wo, T, x_.as<float>(), true);
}

// Norm+quantize, gate/up (LLM_FFN_PAR: one quantized input), ReLU² gate + (sub-norm+) quantize,
// down added to x.
void cuda_engine::record_ffn(cuda::launch_plan& p, std::uint32_t l, std::uint32_t T) const {
    const std::uint32_t n_ff = config_.n_ff;
    const device_layer& L = layers_[l];
    auto* gate_up = gate_up_.as<float>(); // [T][2 n_ff]: gate, then up
    record_norm_quantize(p, x_.as<float>(), config_.n_embd, nullptr, L.ffn_norm, T, config_.n_embd);
    record_product(p, L.gate_up, T, gate_up, false);
    // Rows of stride 2 n_ff: x is the gate half, u the up half of the same row.
    record_norm_quantize(p, gate_up, 2 * n_ff, gate_up + n_ff, L.ffn_sub_norm, T, n_ff);
    record_product(p, L.down, T, x_.as<float>(), true);
}

// The embeddings (gathered on the device when it holds the table), then every layer.
void cuda_engine::record_layers(cuda::launch_plan& p, std::uint32_t T) const {
    if (device_embedding_) {
        cuda::embed_args e;
        e.table = logits_w_.as<std::uint16_t>();
        e.n_embd = config_.n_embd;
        e.tokens = tokens_.d();
        e.n_rows = T;
        e.x = x_.as<float>();
        e.ldx = config_.n_embd;
        p.add(e);
    }
    for (std::uint32_t l = 0; l < config_.n_layer; ++l) {
        record_attention(p, l, T);
        record_ffn(p, l, T);
    }
}

// The final norm of logits rows [r0, r0 + n) (rows_ gathers their step rows from the residual),
// the F16 logits product into logits_ (row r0 + i at row i), then the samples drawn from them.
void cuda_engine::record_logits(cuda::launch_plan& p, std::uint32_t r0, std::uint32_t n,
                                const step_layout& L) const {
    const model_config& c = config_;
    cuda::rms_norm_args r;
    r.x = x_.as<float>();
    r.ldx = c.n_embd;
    r.weight = output_norm_.as<float>();
    r.y = gate_up_.as<float>(); // free after the last layer, and rows of 2 n_ff ≥ n_embd
    r.ldy = c.n_embd;
    r.n_rows = n;
    r.n = c.n_embd;
    r.eps = c.rms_eps;
    r.rows = rows_.d() + r0;
    p.add(r);
    cuda::f16_gemm_args g;
    g.w = logits_w_.as<std::uint16_t>();
    g.rows = c.n_vocab;
    g.cols = c.n_embd;
    g.x = gate_up_.as<float>();
    g.ldx = c.n_embd;
    g.n_rows = n;
    g.y = logits_.as<float>();
    g.ldy = c.n_vocab;
    p.add(g);
    record_sampling(p, r0, n, L);
}

// The sampler over the samples drawn from logits rows [r0, r0 + n): their parameters, logits
// rows and results are consecutive in the staged arrays (prepare_step orders them so), and they
// go in launches of at most sample_rows_max_ rows (the scratch's).
void cuda_engine::record_sampling(cuda::launch_plan& p, std::uint32_t r0, std::uint32_t n,
                                  const step_layout& L) const {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    bool any = false;
    for (std::uint32_t r = r0; r < r0 + n; ++r) {
        const std::int32_t s = L.sample_of_row[r];
        if (s < 0)
            continue;
        if (!any)
            first = static_cast<std::uint32_t>(s);
        any = true;
        ++count;
    }
    for (std::uint32_t done = 0; done < count; done += sample_rows_max_) {
        cuda::sample_args a;
        a.logits = logits_.as<float>();
        a.ldl = config_.n_vocab;
        a.n_vocab = config_.n_vocab;
        a.n_rows = std::min(sample_rows_max_, count - done);
        a.logits_row = sample_rows_.d() + first + done;
        a.params = sample_params_.d() + first + done;
        a.adjust = sample_adjust_.d();
        a.work = sample_work_.as<float>();
        a.keys = sample_keys_.as<std::uint64_t>();
        a.n_pow2 = sort_keys_;
        a.out = sample_out_.d() + first + done;
        p.add(a);
    }
}

} // namespace bitnet::model
