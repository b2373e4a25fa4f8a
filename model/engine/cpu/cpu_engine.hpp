// The CPU implementation of the engine facade: the forward pass of docs/GGUF-FORMAT.md §3.4 over a
// batch of sequence chunks, with the ternary kernels, a paged F16 KV cache and the compute pool's
// threads.
//
// One step, T tokens in all:
//   1. validate the whole batch and reserve its KV rows (nothing changes on error);
//   2. embed the T tokens;
//   3. per layer: norm → one int8 quantization feeding q/k/v → RoPE → K/V rows into the cache →
//      attention per token over its own sequence's blocks → sub-norm → o → residual → norm → one
//      quantization feeding gate/up → activation → sub-norm → down → residual;
//   4. final norm and F16 logits only for the chunks that asked (every token's, for a chunk
//      with all_logits).
// Every matrix product sees all T tokens at once, so each weight tile is unpacked once per step.
// The per-row work between two products (residual add, norm, quantization; activation, sub-norm,
// quantization) is one parallel region over the tokens (rows_to_acts), so a layer of a batched
// step wakes the compute threads 10 times rather than once per kernel.
#pragma once

#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/q8_matmul.hpp"
#include "kernels/rope.hpp"
#include "kernels/ternary_matmul.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/kernel_choice.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_weights.hpp"
#include "model/engine/paged_kv_engine.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <memory>
#include <span>
#include <vector>

namespace bitnet::model {

class cpu_engine final : public paged_kv_engine {
public:
    cpu_engine(model_config config, tokenizer vocab, model_weights weights, kv_cache cache,
               kernel_plan plan, screen_rows_choice screen, const engine_options& opt);

    [[nodiscard]] const model_config& config() const noexcept override { return config_; }
    [[nodiscard]] const tokenizer& vocab() const noexcept override { return vocab_; }
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] std::vector<kernel_choice> kernel_choices() const override {
        return plan_.report();
    }
    [[nodiscard]] std::uint64_t weight_bytes() const noexcept override;
    [[nodiscard]] std::uint64_t bytes_per_decode_token() const noexcept override {
        return weights_.projection_bytes + weights_.logits_bytes;
    }
    [[nodiscard]] result<step_output> step(std::span<const seq_chunk> batch) override;

private:
    /// Where token t of the step comes from.
    struct token_slot {
        std::uint32_t chunk = 0;
        std::uint32_t pos = 0;
    };

    /// The pass over a validated batch whose KV rows are appended; may throw (allocation).
    [[nodiscard]] step_output forward(std::span<const seq_chunk> batch);
    // The pass's parts: work buffers, token slots, embeddings and RoPE angles (returns the
    // token count T); one layer's attention and feed-forward blocks; the logits rows.
    std::size_t prepare_step(std::span<const seq_chunk> batch);
    void attention_block(std::span<const seq_chunk> batch, std::uint32_t layer, std::size_t T);
    void ffn_block(std::uint32_t layer, std::size_t T);
    /// fn(t0, t1) over ranges of the step's T tokens, on the compute threads when a prefill's
    /// token count makes it worth waking them (each token's rows are independent).
    template <class Fn>
    void per_token_rows(std::size_t T, Fn&& fn);
    /// x_ += cur_ over the step's T rows.
    void add_to_residual(std::size_t T);
    /// One parallel region over the step's T rows of width n: prologue(t0, t1) (the previous
    /// block's residual add, or the gated activation), then the RMS norm of `in` with `norm` into
    /// `out` (skipped when norm is null: `in` is quantized as it is), then the int8 quantization
    /// into acts_. Each is per row, so the rows' bytes are those of the separate kernels; a
    /// 32-token step has 7 regions a layer fewer than with each kernel splitting the rows itself.
    template <class Prologue>
    void rows_to_acts(std::size_t T, std::size_t n, const float* in, const float* norm, float* out,
                      Prologue&& prologue);
    /// x_ += cur_ over rows [t0, t1): a block's output projection leaves its output in cur_ for
    /// the next block's first region to add, or for forward() after the last layer.
    void add_residual_rows(std::size_t t0, std::size_t t1);
    [[nodiscard]] step_output logits_for(std::span<const seq_chunk> batch);
    void bitlinear(const projection& p, const kernels::quantized_acts& a, float* y,
                   std::size_t ldy);
    /// Projections of one quantized input (Q, K, V; gate, up) in one parallel region
    /// (kernels::ternary_matmul_group), each then scaled as bitlinear does: the same numbers.
    struct projection_out {
        const projection* p;
        float* y;
        std::size_t ldy;
    };
    void bitlinears(std::span<const projection_out> outs, const kernels::quantized_acts& a);
    void attention_layer(std::span<const seq_chunk> batch, std::uint32_t layer);
    /// logits_for's rows when greedy-only chunks meet a greedy screen (cpu_engine.cpp).
    bool screen_rows(std::span<const seq_chunk> batch, step_output& out,
                     const std::vector<float>& normed);
    [[nodiscard]] const kernels::rope_angles& angles(std::uint32_t pos);

    model_config config_;
    tokenizer vocab_;
    model_weights weights_;
    kernel_plan plan_;
    /// Steps with more greedy-only rows than screen_.max_rows compute them in F16 (measured).
    screen_rows_choice screen_;
    engine_options opt_;
    int n_threads_ = 1;
    kernels::rope_style rope_style_ = kernels::rope_style::neox;
    kernels::ffn_activation activation_;

    // Per-step work buffers, grown to the largest step seen (T rows each).
    std::vector<token_slot> slots_;
    std::vector<float> x_;    ///< residual stream [T][n_embd]
    std::vector<float> cur_;  ///< normed input [T][max(n_embd, n_ff)]
    std::vector<float> q_;    ///< [T][n_embd_q]
    std::vector<float> k_;    ///< [T][n_embd_kv]
    std::vector<float> v_;    ///< [T][n_embd_kv]
    std::vector<float> attn_; ///< [T][n_embd_q]
    std::vector<float> gate_; ///< [T][n_ff]
    std::vector<float> up_;   ///< [T][n_ff]
    kernels::quantized_acts acts_;
    kernels::q8_0_acts logits_acts_; ///< the logits rows in Q8_0 blocks (Q8_0 logits only)
    std::vector<kernels::attention_scratch> attn_scratch_; ///< one per thread
    std::vector<kernels::rope_angles> rope_cache_;         ///< by position, built on demand
};

} // namespace bitnet::model
