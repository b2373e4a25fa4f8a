// cuda_engine's step: the forward pass of spec §3.4 as a sequence of kernel launches on the ops'
// one stream, in the CPU engine's order and with its rounding points (each kernel's contract in
// kernels/cuda/kernel_args.hpp names the CPU kernel it matches).
#include "model/engine/cuda/cuda_engine.hpp"

#include "model/engine/step_bookkeeping.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace bitnet::model {

namespace cuda = kernels::cuda;

std::string cuda_engine::describe() const {
    std::ostringstream s;
    s << ops_->describe() << ": " << config_.arch_name << ", " << config_.n_layer
      << " layers, n_embd " << config_.n_embd << ", vocab " << config_.n_vocab << "; weights "
      << formats_
      << " repacked at load into the GPU ternary layout (2 bits a weight, 16 columns a 32-bit "
         "word, dp4a-ready); logits F16 on the device; KV "
      << cache_.n_blocks_total() << " blocks of " << cache_.block_tokens()
      << " tokens (F16, on the device); " << device_bytes_ << " bytes of device memory; the host "
      << "keeps the token embedding for lookups (" << host_weights_.owned_bytes << " bytes); ";
    if (ops_->simulated())
        s << "kernels run and checked against the CPU kernels on the simulated grid (host)";
    else
        s << "kernels checked against the CPU kernels on the simulated grid (host); on this "
             "device by `ctest -L gpu` where that suite was run";
    return s.str();
}

result<step_output> cuda_engine::step(std::span<const seq_chunk> batch) {
    if (batch.empty())
        return step_output{};
    BITNET_TRY(validate_step(batch, config_, cache_, opt_.max_batch_tokens));
    // A device's own failure (a failed launch, a lost device) is not this step's error alone: a
    // CUDA context is unusable after one, so every later step would fail too. The step is rolled
    // back like any failed step, then the failure goes on to the caller, whose executor ends as a
    // crash does, so the supervisor moves the version to its next placement (the CPU last).
    std::optional<cuda::device_error> fault;
    auto out = append_and_run(
        cache_, batch,
        [&] {
            try {
                return forward(batch);
            } catch (const cuda::device_error& e) {
                fault = e;
                throw;
            }
        },
        [&] { settle_after_failure(); });
    if (fault)
        throw *fault;
    return out;
}

// The copy-on-write copies the cache recorded while appending, before anything of the step
// writes into their destination blocks (the stream keeps them in order).
void cuda_engine::copy_pending_blocks() {
    auto* pool = kv_pool_.as<std::uint16_t>();
    const std::uint64_t bytes = kv_cache::block_bytes(cache_.options());
    for (const kv_block_copy& c : cache_.take_pending_copies())
        ops_->copy(pool + cache_.k_tile_offset(c.dst, 0), pool + cache_.k_tile_offset(c.src, 0),
                   bytes);
}

// A failed step's sequences keep the private copies append() made of shared blocks (truncate
// drops only the step's rows), so the copies must reach the device even then. A device that
// fails this too has failed the step already: nothing more to report.
void cuda_engine::settle_after_failure() noexcept {
    try {
        copy_pending_blocks();
        ops_->finish();
    } catch (const std::exception&) {
    }
}

step_output cuda_engine::forward(std::span<const seq_chunk> batch) {
    copy_pending_blocks();
    const std::uint32_t T = prepare_step(batch);
    for (std::uint32_t l = 0; l < config_.n_layer; ++l) {
        attention_block(l, T);
        ffn_block(l, T);
    }
    return logits_for(batch);
}

// The step's tables on the host (pinned), then one upload each: embeddings, positions, where each
// token's K/V row goes, and for attention each row's block list, context and decode semantics.
std::uint32_t cuda_engine::prepare_step(std::span<const seq_chunk> batch) {
    const std::uint32_t n_embd = config_.n_embd;
    auto* embd = embd_host_.as<float>();
    std::uint32_t t = 0;
    std::uint32_t n_tiles = 0;
    for (const seq_chunk& c : batch) {
        // Every row of a chunk reads its sequence's one block list (after this step's append).
        const auto blocks = cache_.block_table(c.seq);
        if (n_tiles + blocks.size() > tiles_capacity_)
            throw std::logic_error("the step's block tables exceed their buffer");
        const std::uint32_t first = n_tiles;
        for (kv_cache::block_id b : blocks) {
            k_tiles_.h()[n_tiles] = cache_.k_tile_offset(b, 0);
            v_tiles_.h()[n_tiles] = cache_.v_tile_offset(b, 0);
            ++n_tiles;
        }
        for (std::uint32_t j = 0; j < c.tokens.size(); ++j, ++t) {
            const std::uint32_t pos = c.pos0 + j;
            embedding_row(host_weights_, n_embd, c.tokens[j], embd + std::size_t{t} * n_embd);
            pos_.h()[t] = static_cast<std::int32_t>(pos);
            k_dst_.h()[t] = cache_.k_row_offset(c.seq, 0, pos);
            v_dst_.h()[t] = cache_.v_row_offset(c.seq, 0, pos);
            table_.h()[t] = first;
            n_ctx_.h()[t] = pos + 1;
            // bitnet.cpp rounds attention probabilities to F16 only in single-token steps (§3.6);
            // per chunk and position as the CPU engine decides (seq_chunk::decodes).
            round_.h()[t] = c.decodes(pos) ? 1 : 0;
        }
    }
    const std::uint32_t T = t;
    // Attention launches whose rows × context fit the scores' scratch (one row always fits).
    groups_.clear();
    for (std::uint32_t r = 0; r < T; ++r) {
        const std::uint32_t ctx = n_ctx_.h()[r];
        if (!groups_.empty()) {
            attention_group& g = groups_.back();
            const std::uint32_t m = std::max(g.max_ctx, ctx);
            if (std::uint64_t{g.end - g.begin + 1} * m <= scratch_row_ctx_) {
                g.end = r + 1;
                g.max_ctx = m;
                continue;
            }
        }
        groups_.push_back({r, r + 1, ctx});
    }
    auto up = [&](auto& s, std::size_t n) { ops_->upload(s.d(), s.h(), n * sizeof(*s.h())); };
    ops_->upload(x_.as<void>(), embd, std::size_t{T} * n_embd * sizeof(float));
    up(pos_, T);
    up(k_dst_, T);
    up(v_dst_, T);
    up(table_, T);
    up(n_ctx_, T);
    up(round_, T);
    up(k_tiles_, n_tiles);
    up(v_tiles_, n_tiles);
    return T;
}

void cuda_engine::norm(const float* x, std::uint32_t ld, const device_memory& w,
                       std::uint32_t n_rows, std::uint32_t n, float* y, const std::int32_t* rows) {
    cuda::rms_norm_args a;
    a.x = x;
    a.ldx = ld;
    a.weight = w.as<float>();
    a.y = y;
    a.ldy = n;
    a.n_rows = n_rows;
    a.n = n;
    a.eps = config_.rms_eps;
    a.rows = rows;
    ops_->run(a);
}

// One int8 quantization of n_rows rows of k floats into acts_q_ / acts_scale_, feeding every
// projection of that input (q/k/v share one, gate/up share one, as on the CPU).
void cuda_engine::quantize(const float* x, std::uint32_t n_rows, std::uint32_t k) {
    cuda::quantize_args a;
    a.x = x;
    a.ldx = k;
    a.n_rows = n_rows;
    a.k = k;
    a.q = acts_q_.as<std::int8_t>();
    a.ldq = k;
    a.scale = acts_scale_.as<float>();
    ops_->run(a);
}

void cuda_engine::bitlinear(const device_projection& p, std::uint32_t n_rows, float* y) {
    cuda::ternary_gemm_args a;
    a.w = p.w.as<std::uint8_t>();
    a.rows = p.rows;
    a.cols = p.cols;
    a.w_scale = p.scale;
    a.q = acts_q_.as<std::int8_t>();
    a.ldq = p.cols;
    a.act_scale = acts_scale_.as<float>();
    a.n_rows = n_rows;
    a.y = y;
    a.ldy = p.rows;
    a.out_multiplier = p.out_multiplier;
    ops_->run(a);
}

// A block's input: the residual stream normed into cur, quantized once for its projections.
void cuda_engine::norm_and_quantize(const device_memory& w, std::uint32_t T) {
    norm(x_.as<float>(), config_.n_embd, w, T, config_.n_embd, cur_.as<float>());
    quantize(cur_.as<float>(), T, config_.n_embd);
}

// A block's output: its n-wide rows `in` (sub-normed into cur when the model has sub-norms),
// quantized, projected back to n_embd by `w` into cur, and added to the residual stream.
void cuda_engine::block_output(const float* in, std::uint32_t n, const device_memory& sub_norm,
                               const device_projection& w, std::uint32_t T) {
    auto* cur = cur_.as<float>();
    if (config_.has_sub_norms) {
        norm(in, n, sub_norm, T, n, cur);
        in = cur;
    }
    quantize(in, T, n);
    bitlinear(w, T, cur); // its input now lives in acts_q_
    cuda::add_args a;
    a.x = x_.as<float>();
    a.d = cur;
    a.n = std::uint64_t{T} * config_.n_embd;
    ops_->run(a);
}

// Norm, Q/K/V projections, RoPE, KV append, attention, (sub-norm), output projection, residual.
void cuda_engine::attention_block(std::uint32_t l, std::uint32_t T) {
    const model_config& c = config_;
    const std::uint32_t n_q = c.n_embd_q();
    const std::uint32_t n_kv = c.n_embd_kv();
    const device_layer& L = layers_[l];
    auto* q = q_.as<float>();
    auto* k = k_.as<float>();
    auto* v = v_.as<float>();
    auto* attn = attn_.as<float>();

    norm_and_quantize(L.attn_norm, T);
    bitlinear(L.wq, T, q);
    bitlinear(L.wk, T, k);
    bitlinear(L.wv, T, v);

    cuda::rope_args r;
    r.n_rows = T;
    r.head_dim = c.head_dim;
    r.neox = c.rope == rope_style::neox;
    r.cos_sin = rope_table_.as<float>();
    r.pos = pos_.d();
    r.x = q;
    r.ldx = n_q;
    r.n_heads = c.n_head;
    ops_->run(r);
    r.x = k;
    r.ldx = n_kv;
    r.n_heads = c.n_head_kv;
    ops_->run(r);

    // One table of layer-0 offsets for every layer: the pool's base moves by the layer's offset.
    std::uint16_t* pool = kv_pool_.as<std::uint16_t>() + cache_.layer_offset(l);
    cuda::kv_append_args kv;
    kv.k = k;
    kv.v = v;
    kv.ld = n_kv;
    kv.n_rows = T;
    kv.n_kv = n_kv;
    kv.pool = pool;
    kv.k_dst = k_dst_.d();
    kv.v_dst = v_dst_.d();
    ops_->run(kv);

    for (const attention_group& g : groups_) {
        cuda::paged_attention_args a;
        a.q = q + std::size_t{g.begin} * n_q;
        a.ldq = n_q;
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
        ops_->run(a);
    }

    block_output(attn, n_q, L.attn_sub_norm, L.wo, T);
}

// Feed-forward block: gate and up share one quantized input (LLM_FFN_PAR), ReLU² gating.
void cuda_engine::ffn_block(std::uint32_t l, std::uint32_t T) {
    const std::uint32_t n_ff = config_.n_ff;
    const device_layer& L = layers_[l];
    auto* gate = gate_.as<float>();
    auto* up = up_.as<float>();

    norm_and_quantize(L.ffn_norm, T);
    bitlinear(L.w_gate, T, gate);
    bitlinear(L.w_up, T, up);
    cuda::relu_sqr_gate_args g;
    g.g = gate;
    g.u = up;
    g.z = gate;
    g.n = std::uint64_t{T} * n_ff;
    ops_->run(g);
    block_output(gate, n_ff, L.ffn_sub_norm, L.w_down, T);
}

// The rows select_logits_rows picks (the CPU engine's rule): the final norm gathers exactly those
// rows of the residual, then the F16 logits product, downloaded through the pinned buffer in
// launches of at most logits_rows_max_ rows.
step_output cuda_engine::logits_for(std::span<const seq_chunk> batch) {
    const model_config& c = config_;
    step_output out;
    const std::vector<std::size_t> rows = select_logits_rows(batch, out);
    const auto n_rows = static_cast<std::uint32_t>(rows.size());
    for (std::uint32_t r = 0; r < n_rows; ++r)
        rows_.h()[r] = static_cast<std::int32_t>(rows[r]);
    if (n_rows > 0)
        ops_->upload(rows_.d(), rows_.h(), n_rows * sizeof(std::int32_t));
    out.logits.resize(std::size_t{n_rows} * c.n_vocab);
    const std::size_t row_bytes = std::size_t{c.n_vocab} * sizeof(float);
    for (std::uint32_t r0 = 0; r0 < n_rows; r0 += logits_rows_max_) {
        const std::uint32_t n = std::min(logits_rows_max_, n_rows - r0);
        norm(x_.as<float>(), c.n_embd, output_norm_, n, c.n_embd, cur_.as<float>(), rows_.d() + r0);
        cuda::f16_gemm_args g;
        g.w = logits_w_.as<std::uint16_t>();
        g.rows = c.n_vocab;
        g.cols = c.n_embd;
        g.x = cur_.as<float>();
        g.ldx = c.n_embd;
        g.n_rows = n;
        g.y = logits_.as<float>();
        g.ldy = c.n_vocab;
        ops_->run(g);
        ops_->download(logits_host_.as<void>(), logits_.as<void>(), n * row_bytes);
        ops_->finish();
        std::memcpy(out.logits.data() + std::size_t{r0} * c.n_vocab, logits_host_.as<void>(),
                    n * row_bytes);
    }
    ops_->finish(); // the step's work is done (and its failures reported) before it returns
    return out;
}

} // namespace bitnet::model
