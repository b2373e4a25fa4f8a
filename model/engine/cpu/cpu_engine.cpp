#include "model/engine/cpu/cpu_engine.hpp"

#include "kernels/activation.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"
#include "kernels/greedy_screen.hpp"
#include "kernels/parallel.hpp"
#include "kernels/rms_norm.hpp"
#include "model/engine/step_bookkeeping.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

namespace bitnet::model {

cpu_engine::cpu_engine(model_config config, tokenizer vocab, model_weights weights, kv_cache cache,
                       kernel_plan plan, screen_rows_choice screen, const engine_options& opt)
    : paged_kv_engine(std::move(cache))
    , config_(std::move(config))
    , vocab_(std::move(vocab))
    , weights_(std::move(weights))
    , plan_(std::move(plan))
    , screen_(std::move(screen))
    , opt_(opt)
    , n_threads_(kernels::resolve_threads(opt.n_threads))
    , rope_style_(config_.rope == rope_style::neox ? kernels::rope_style::neox
                                                   : kernels::rope_style::norm)
    , activation_(config_.activation == ffn_activation::relu_sqr ? kernels::ffn_activation::relu_sqr
                                                                 : kernels::ffn_activation::silu)
    , attn_scratch_(static_cast<std::size_t>(n_threads_)) {}

std::string cpu_engine::describe() const {
    std::ostringstream s;
    const kernels::isa family =
        weights_.layers.empty() ? kernels::best_isa() : weights_.layers[0].wq.w.family;
    s << config_.arch_name << ", " << config_.n_layer << " layers, n_embd " << config_.n_embd
      << ", vocab " << config_.n_vocab << "; weights " << weights_.formats
      << " repacked at load for the " << kernels::isa_name(family) << " ternary kernels; logits "
      << (weights_.logits_q8       ? "Q8_0 (opt-in, 32-value blocks)"
          : weights_.logits_screen ? "F16, greedy screen (opt-in Q8_0 copy) for steps of at most " +
                                         std::to_string(screen_.max_rows) +
                                         " greedy-only rows (screen/F16: " + screen_.timings + ")"
                                   : std::string("F16"))
      << "; " << n_threads_ << " threads; KV " << cache_.n_blocks_total() << " blocks of "
      << cache_.block_tokens() << " tokens (" << (cache_.options().q8_0 ? "Q8_0" : "F16")
      << "); kernels: " << plan_.summary();
    return s.str();
}

std::uint64_t cpu_engine::weight_bytes() const noexcept {
    return weights_.owned_bytes;
}

const kernels::rope_angles& cpu_engine::angles(std::uint32_t pos) {
    while (rope_cache_.size() <= pos) {
        kernels::rope_angles a;
        kernels::rope_angles_for(
            static_cast<std::uint32_t>(rope_cache_.size()), config_.head_dim, config_.rope_base,
            weights_.rope_freqs.empty() ? nullptr : weights_.rope_freqs.data(), a);
        rope_cache_.push_back(std::move(a));
    }
    return rope_cache_[pos];
}

void cpu_engine::bitlinear(const projection& p, const kernels::quantized_acts& a, float* y,
                           std::size_t ldy) {
    kernels::ternary_matmul(p.w, a, y, ldy, n_threads_, plan_.ternary_for(a.n_rows));
    if (p.out_multiplier != 1.0f)
        for (std::size_t t = 0; t < a.n_rows; ++t)
            for (std::uint32_t m = 0; m < p.w.rows; ++m)
                y[t * ldy + m] *= p.out_multiplier;
}

void cpu_engine::bitlinears(std::span<const projection_out> outs,
                            const kernels::quantized_acts& a) {
    std::array<kernels::ternary_product, 4> group{};
    for (std::size_t i = 0; i < outs.size(); ++i)
        group.at(i) = {&outs[i].p->w, outs[i].y, outs[i].ldy};
    kernels::ternary_matmul_group(std::span(group.data(), outs.size()), a, n_threads_,
                                  plan_.ternary_for(a.n_rows));
    for (const auto& o : outs)
        if (o.p->out_multiplier != 1.0f)
            for (std::size_t t = 0; t < a.n_rows; ++t)
                for (std::uint32_t m = 0; m < o.p->w.rows; ++m)
                    o.y[t * o.ldy + m] *= o.p->out_multiplier;
}

void cpu_engine::attention_layer(std::span<const seq_chunk> batch, std::uint32_t layer) {
    const std::size_t n_q = config_.n_embd_q();
    std::vector<kv_layer_view> views;
    views.reserve(batch.size());
    for (const seq_chunk& c : batch)
        views.push_back(cache_.layer_view(c.seq, layer));
    const kernels::attention_shape shape{config_.n_head, config_.n_head_kv, config_.head_dim,
                                         1.0f / std::sqrt(static_cast<float>(config_.head_dim))};
    // Work items are (token, KV head) pairs: one decoding sequence still spreads its heads over
    // every thread. Heads are independent, so the split never changes a bit.
    const std::uint32_t n_kv_head = config_.n_head_kv;
    kernels::parallel_items(
        slots_.size() * n_kv_head, n_threads_, [&](std::size_t item, int thread) {
            const std::size_t t = item / n_kv_head;
            const auto kvh = static_cast<std::uint32_t>(item % n_kv_head);
            const token_slot& s = slots_[t];
            const kv_layer_view& view = views[s.chunk];
            const kernels::paged_kv kv{view.k_blocks.data(), view.v_blocks.data(),
                                       cache_.block_tokens(), s.pos + 1, cache_.options().q8_0};
            // bitnet.cpp rounds attention probabilities to F16 only in single-token steps
            // (docs/GGUF-FORMAT.md §3.6);
            // deciding per chunk (and per position, for positions first decoded one at a time: see
            // seq_chunk::decoded_from) keeps a sequence's numbers independent of its batch-mates
            // and of how a recompute is chunked.
            const bool single = batch[s.chunk].decodes(s.pos);
            kernels::attention_kv_heads(
                q_.data() + t * n_q, shape, kv, single, attn_.data() + t * n_q,
                attn_scratch_[static_cast<std::size_t>(thread)], kvh, kvh + 1);
        });
}

result<step_output> cpu_engine::step(std::span<const seq_chunk> batch) {
    if (batch.empty())
        return step_output{};
    BITNET_TRY(validate_step(batch, config_, cache_, opt_.max_batch_tokens));
    return append_and_run(
        cache_, batch, [&] { return forward(batch); }, [] {});
}

step_output cpu_engine::forward(std::span<const seq_chunk> batch) {
    const std::size_t T = prepare_step(batch);
    for (std::uint32_t l = 0; l < config_.n_layer; ++l) {
        attention_block(batch, l, T);
        ffn_block(l, T);
    }
    add_to_residual(T); // the last feed-forward block's output
    return logits_for(batch);
}

std::size_t cpu_engine::prepare_step(std::span<const seq_chunk> batch) {
    const model_config& c = config_;
    const std::size_t T = batch_tokens(batch);
    const std::size_t n_embd = c.n_embd;
    const std::size_t n_q = c.n_embd_q();
    const std::size_t n_kv = c.n_embd_kv();
    const std::size_t n_ff = c.n_ff;
    const std::size_t n_wide = std::max({n_embd, n_q, n_ff});
    slots_.clear();
    for (std::uint32_t i = 0; i < batch.size(); ++i)
        for (std::uint32_t j = 0; j < batch[i].tokens.size(); ++j)
            slots_.push_back({i, batch[i].pos0 + j});
    x_.resize(T * n_embd);
    cur_.resize(T * n_wide);
    q_.resize(T * n_q);
    k_.resize(T * n_kv);
    v_.resize(T * n_kv);
    attn_.resize(T * n_q);
    gate_.resize(T * n_ff);
    up_.resize(T * n_ff);

    // Embeddings, and the RoPE angles of every position in the step.
    {
        std::size_t t = 0;
        for (const seq_chunk& ch : batch)
            for (std::int32_t id : ch.tokens)
                embedding_row(weights_, c.n_embd, id, x_.data() + (t++) * n_embd);
    }
    for (std::size_t t = 0; t < T; ++t)
        (void)angles(slots_[t].pos);
    return T;
}

namespace {

// Below this many tokens a step's per-token work runs on the calling thread: waking the others
// costs more than a decode step's few rows.
constexpr std::size_t parallel_tokens_from = 8;

} // namespace

template <class Fn>
void cpu_engine::per_token_rows(std::size_t T, Fn&& fn) {
    kernels::parallel_ranges(T, 1, T < parallel_tokens_from ? 1 : n_threads_, fn);
}

void cpu_engine::add_to_residual(std::size_t T) {
    per_token_rows(T, [&](std::size_t t0, std::size_t t1) { add_residual_rows(t0, t1); });
}

void cpu_engine::add_residual_rows(std::size_t t0, std::size_t t1) {
    const std::size_t n = config_.n_embd;
    for (std::size_t i = t0 * n; i < t1 * n; ++i)
        x_[i] += cur_[i];
}

template <class Prologue>
void cpu_engine::rows_to_acts(std::size_t T, std::size_t n, const float* in, const float* norm,
                              float* out, Prologue&& prologue) {
    acts_.resize(T, n);
    const kernels::isa family = kernels::best_isa();
    const int threads = T * n < kernels::row_parallel_from ? 1 : n_threads_;
    kernels::parallel_ranges(T, 1, threads, [&](std::size_t t0, std::size_t t1) {
        prologue(t0, t1);
        const float* q_in = in;
        if (norm != nullptr) {
            kernels::rms_norm(in + t0 * n, norm, t1 - t0, n, n, config_.rms_eps, out + t0 * n);
            q_in = out;
        }
        kernels::quantize_activation_rows(q_in, t0, t1, n, acts_, family);
    });
}

// (The previous layer's residual add,) norm, Q/K/V projections, RoPE, KV append, attention,
// (sub-norm), output projection; its output stays in cur_ for the feed-forward block's first
// region to add.
void cpu_engine::attention_block(std::span<const seq_chunk> batch, std::uint32_t l, std::size_t T) {
    const model_config& c = config_;
    const std::size_t n_embd = c.n_embd;
    const std::size_t n_q = c.n_embd_q();
    const std::size_t n_kv = c.n_embd_kv();
    const layer_weights& L = weights_.layers[l];
    rows_to_acts(T, n_embd, x_.data(), L.attn_norm.data(), cur_.data(),
                 [&](std::size_t t0, std::size_t t1) {
                     if (l > 0)
                         add_residual_rows(t0, t1);
                 });
    const projection_out qkv[] = {
        {&L.wq, q_.data(), n_q}, {&L.wk, k_.data(), n_kv}, {&L.wv, v_.data(), n_kv}};
    bitlinears(qkv, acts_);
    // Each token's rows are its own (RoPE in place, its KV slots written), so a prefill's tokens
    // split over the threads; the cache's lookups only read its tables.
    per_token_rows(T, [&](std::size_t t0, std::size_t t1) {
        for (std::size_t t = t0; t < t1; ++t) {
            const token_slot& s = slots_[t];
            const kernels::rope_angles& a = rope_cache_[s.pos];
            kernels::rope_apply(q_.data() + t * n_q, c.n_head, c.head_dim, rope_style_, a);
            kernels::rope_apply(k_.data() + t * n_kv, c.n_head_kv, c.head_dim, rope_style_, a);
            const seq_id seq = batch[s.chunk].seq;
            const bool q8 = cache_.options().q8_0;
            kernels::store_kv_row(k_.data() + t * n_kv, c.n_head_kv, c.head_dim, q8,
                                  cache_.k_row(seq, l, s.pos));
            kernels::store_kv_row(v_.data() + t * n_kv, c.n_head_kv, c.head_dim, q8,
                                  cache_.v_row(seq, l, s.pos));
        }
    });
    attention_layer(batch, l);
    rows_to_acts(T, n_q, attn_.data(), c.has_sub_norms ? L.attn_sub_norm.data() : nullptr,
                 cur_.data(), [](std::size_t, std::size_t) {});
    bitlinear(L.wo, acts_, cur_.data(), n_embd); // its input now lives in acts_
}

// Feed-forward block (the attention block's residual add first): gate and up share one quantized
// input (LLM_FFN_PAR).
void cpu_engine::ffn_block(std::uint32_t l, std::size_t T) {
    const model_config& c = config_;
    const std::size_t n_embd = c.n_embd;
    const std::size_t n_ff = c.n_ff;
    const layer_weights& L = weights_.layers[l];
    rows_to_acts(T, n_embd, x_.data(), L.ffn_norm.data(), cur_.data(),
                 [&](std::size_t t0, std::size_t t1) { add_residual_rows(t0, t1); });
    const projection_out gate_up[] = {{&L.w_gate, gate_.data(), n_ff}, {&L.w_up, up_.data(), n_ff}};
    bitlinears(gate_up, acts_);
    // The activation in place, then the sub-norm in place: each row's own.
    rows_to_acts(T, n_ff, gate_.data(), c.has_sub_norms ? L.ffn_sub_norm.data() : nullptr,
                 gate_.data(), [&](std::size_t t0, std::size_t t1) {
                     kernels::gated_activation(activation_, gate_.data() + t0 * n_ff,
                                               up_.data() + t0 * n_ff, (t1 - t0) * n_ff,
                                               gate_.data() + t0 * n_ff);
                 });
    bitlinear(L.w_down, acts_, cur_.data(), n_embd); // added by the next layer, or forward()
}

// Logits for the last token of every chunk that wants them, and for every token of a chunk
// that asks for all of them (prompt logprobs). Each row is the final norm of its token's residual
// and one row of the logits matmul, whatever the other rows: a chunk's last row is the same bits
// with or without all_logits.
step_output cpu_engine::logits_for(std::span<const seq_chunk> batch) {
    const model_config& c = config_;
    const std::size_t n_embd = c.n_embd;
    step_output out;
    const std::vector<std::size_t> rows = select_logits_rows(batch, out);
    if (!rows.empty()) {
        std::vector<float> normed(rows.size() * n_embd);
        for (std::size_t r = 0; r < rows.size(); ++r)
            kernels::rms_norm(x_.data() + rows[r] * n_embd, weights_.output_norm.data(), 1, n_embd,
                              n_embd, c.rms_eps, normed.data() + r * n_embd);
        out.logits.resize(rows.size() * std::size_t{c.n_vocab});
        if (weights_.logits_q8) {
            // The activations in Q8_0 blocks too (float scales), as ggml's Q8_0 dot product.
            kernels::quantize_q8_0(normed.data(), rows.size(), n_embd, n_embd, logits_acts_);
            kernels::q8_0_matmul(*weights_.logits_q8, logits_acts_, out.logits.data(), c.n_vocab,
                                 n_threads_, plan_.logits_for(rows.size()));
        } else if (!weights_.logits_screen || !screen_rows(batch, out, normed)) {
            kernels::f16_matmul(weights_.logits_f16, c.n_vocab, n_embd, normed.data(), rows.size(),
                                n_embd, out.logits.data(), c.n_vocab, n_threads_,
                                plan_.logits_for(rows.size()));
        }
    }
    return out;
}

// The rows of greedy-only chunks from the screen (-inf but the greedy token, which holds its
// exact value), the others from the F16 product; false (nothing computed) when no chunk asked.
// Every row's values are the ones the F16 product of all rows gives, bit for bit, where they are
// computed: a row's F16 sum depends on that row and its token only.
bool cpu_engine::screen_rows(std::span<const seq_chunk> batch, step_output& out,
                             const std::vector<float>& normed) {
    const std::size_t n_embd = config_.n_embd;
    const std::size_t n_vocab = config_.n_vocab;
    const std::size_t n_rows = normed.size() / n_embd;
    std::vector<char> greedy(n_rows, 0);
    std::size_t n_greedy = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch[i].greedy_only)
            continue;
        // A verification chunk (all_logits): every one of its rows; else its last row.
        const bool every = batch[i].all_logits && i < out.first_row_for_chunk.size() &&
                           out.first_row_for_chunk[i] != step_output::no_row;
        const std::size_t first = every ? out.first_row_for_chunk[i] : out.rows_for_chunk[i];
        const std::size_t n = every ? batch[i].tokens.size() : 1;
        if (first == step_output::no_row)
            continue;
        std::fill_n(greedy.begin() + static_cast<std::ptrdiff_t>(first), n, char{1});
        n_greedy += n;
    }
    // Past the measured count the F16 product of every row is the faster (compute-bound).
    if (n_greedy == 0 || n_greedy > screen_.max_rows)
        return false;
    // Each kind's rows side by side, computed together, then put in place.
    std::vector<std::size_t> picked[2];
    for (std::size_t r = 0; r < n_rows; ++r)
        picked[greedy[r] ? 1 : 0].push_back(r);
    auto gather = [&](const std::vector<std::size_t>& which) {
        std::vector<float> x(which.size() * n_embd);
        for (std::size_t i = 0; i < which.size(); ++i)
            std::copy_n(normed.data() + which[i] * n_embd, n_embd, x.data() + i * n_embd);
        return x;
    };
    if (const auto& full = picked[0]; !full.empty()) {
        const auto x = gather(full);
        std::vector<float> y(full.size() * n_vocab);
        kernels::f16_matmul(weights_.logits_f16, n_vocab, n_embd, x.data(), full.size(), n_embd,
                            y.data(), n_vocab, n_threads_, plan_.logits_for(full.size()));
        for (std::size_t i = 0; i < full.size(); ++i)
            std::copy_n(y.data() + i * n_vocab, n_vocab, out.logits.data() + full[i] * n_vocab);
    }
    const auto& screened = picked[1];
    const auto x = gather(screened);
    std::vector<kernels::screened_token> tokens(screened.size());
    kernels::screened_argmax(*weights_.logits_screen, weights_.logits_f16, x.data(),
                             screened.size(), n_embd, tokens.data(), n_threads_,
                             plan_.logits_for(screened.size()));
    for (std::size_t i = 0; i < screened.size(); ++i) {
        float* row = out.logits.data() + screened[i] * n_vocab;
        std::fill_n(row, n_vocab, -std::numeric_limits<float>::infinity());
        row[tokens[i].token] = tokens[i].logit;
    }
    out.screened_rows = static_cast<std::uint32_t>(screened.size());
    return true;
}

} // namespace bitnet::model
