// The CUDA implementation of the engine facade: the forward pass of spec §3.4 run entirely through
// a kernels::cuda::ops (device memory, copies and the kernels of kernels/cuda/kernel_args.hpp,
// queued in order on one stream). The same code runs on a GPU (make_device_ops) and on the host's
// simulated grid (make_simulated_ops), where every kernel body runs as host loops: that is what
// CI checks against the CPU engine, on machines without a GPU.
//
// What lives where:
//   - device: every projection in the GPU ternary layout (ternary_gpu_layout.hpp), the norms, the
//     F16 logits matrix, the RoPE cos/sin table of every position the KV pool can hold, the KV
//     pool, and the activations of max_batch_tokens tokens (allocated once at load);
//   - host: the token embedding (a step's rows are looked up there and uploaded as T × n_embd
//     floats: one copy, no gather kernel), the KV cache's bookkeeping (model::kv_cache in device
//     mode: block tables, reference counts, prefix index, forks) and pinned staging buffers for
//     the step's tables and logits, reused by every step.
// A step: validate and append (step_bookkeeping, as the CPU engine) → the copy-on-write copies the
// cache recorded → upload embeddings and tables → per layer the kernels → final norm of the wanted
// rows only → F16 logits → download. Sampling stays on the host (the executor samples from the
// returned logits): its samplers, grammar constraints and logprobs are host code, and a row of
// n_vocab floats is a small copy next to a step's weight reads.
#pragma once

#include "kernels/cuda/ops.hpp"
#include "model/engine/cuda/device_memory.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_weights.hpp"
#include "model/engine/paged_kv_engine.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <memory>
#include <vector>

namespace bitnet::model {

/// Caps on the buffers that would otherwise grow with max_batch_tokens × context (the attention
/// scores' scratch) or × vocabulary (the logits): a step past them runs its attention or its
/// logits in several launches. Tests lower them to exercise that on a tiny model.
struct cuda_buffer_caps {
    std::uint64_t logits_bytes = 64ull << 20;            ///< 130 rows of a 128k vocabulary
    std::uint64_t attention_scratch_bytes = 64ull << 20; ///< at least one row at full context
};

/// Loads `opt`'s model onto `device`. errc::unsupported, with the reason in the message, when the
/// model cannot run there: "format unsupported on CUDA: ..." (TL1/TL2 projections, a SiLU
/// feed-forward, Q8_0 logits) or "out of memory on <device>: needs N bytes, M free"; the other
/// errors are engine::load's (a bad file is bad on every device).
[[nodiscard]] result<std::unique_ptr<engine>>
load_cuda_engine(const engine_options& opt, std::unique_ptr<kernels::cuda::ops> device,
                 const cuda_buffer_caps& caps = {});

class cuda_engine final : public paged_kv_engine {
public:
    [[nodiscard]] const model_config& config() const noexcept override { return config_; }
    [[nodiscard]] const tokenizer& vocab() const noexcept override { return vocab_; }
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] std::uint64_t weight_bytes() const noexcept override {
        return device_weight_bytes_ + host_weights_.owned_bytes;
    }
    [[nodiscard]] std::uint64_t bytes_per_decode_token() const noexcept override {
        return projection_bytes_ + logits_bytes_;
    }
    [[nodiscard]] result<step_output> step(std::span<const seq_chunk> batch) override;

    /// Bytes the host keeps for the engine: the token embedding, for lookups.
    [[nodiscard]] std::uint64_t host_bytes() const noexcept { return host_weights_.owned_bytes; }
    /// Bytes of device memory the engine allocated at load (weights, tables, KV pool, buffers).
    [[nodiscard]] std::uint64_t device_bytes() const noexcept { return device_bytes_; }

private:
    friend result<std::unique_ptr<engine>> load_cuda_engine(const engine_options&,
                                                            std::unique_ptr<kernels::cuda::ops>,
                                                            const cuda_buffer_caps&);

    /// One BitLinear on the device.
    struct device_projection {
        device_memory w; ///< GPU layout
        std::uint32_t rows = 0;
        std::uint32_t cols = 0;
        float scale = 0.0f;
        float out_multiplier = 1.0f;
    };
    struct device_layer {
        device_memory attn_norm, attn_sub_norm, ffn_norm, ffn_sub_norm; ///< sub-norms may be empty
        device_projection wq, wk, wv, wo, w_gate, w_up, w_down;
    };
    /// An array a step fills on the host (pinned) and uploads to its device twin.
    template <class T>
    struct staged {
        pinned_memory host;
        device_memory dev;
        [[nodiscard]] T* h() const noexcept { return host.as<T>(); }
        [[nodiscard]] T* d() const noexcept { return dev.as<T>(); }
    };
    /// Query rows [begin, end) of the step attended in one launch, within the scratch's room.
    struct attention_group {
        std::uint32_t begin = 0;
        std::uint32_t end = 0;
        std::uint32_t max_ctx = 0;
    };

    cuda_engine(std::unique_ptr<kernels::cuda::ops> device, model_config config, tokenizer vocab,
                kv_cache cache, const engine_options& opt);

    // Load (cuda_engine_load.cpp): everything allocated once, weights uploaded.
    [[nodiscard]] device_memory alloc(std::size_t bytes);
    template <class T>
    [[nodiscard]] device_memory upload_vector(const std::vector<T>& v);
    [[nodiscard]] device_projection upload_projection(const projection& p);
    void upload_weights(model_weights& w);
    /// Sizes (and unless `dry`, allocates) every per-step buffer; returns their device bytes.
    std::uint64_t plan_buffers(const cuda_buffer_caps& caps, bool dry);

    // Step (cuda_engine.cpp).
    [[nodiscard]] step_output forward(std::span<const seq_chunk> batch);
    void copy_pending_blocks();
    void settle_after_failure() noexcept;
    std::uint32_t prepare_step(std::span<const seq_chunk> batch);
    void attention_block(std::uint32_t layer, std::uint32_t T);
    void ffn_block(std::uint32_t layer, std::uint32_t T);
    [[nodiscard]] step_output logits_for(std::span<const seq_chunk> batch);
    void norm(const float* x, std::uint32_t ld, const device_memory& w, std::uint32_t n_rows,
              std::uint32_t n, float* y, const std::int32_t* rows = nullptr);
    void quantize(const float* x, std::uint32_t n_rows, std::uint32_t k);
    void bitlinear(const device_projection& p, std::uint32_t n_rows, float* y);
    void norm_and_quantize(const device_memory& w, std::uint32_t T);
    void block_output(const float* in, std::uint32_t n, const device_memory& sub_norm,
                      const device_projection& w, std::uint32_t T);

    std::unique_ptr<kernels::cuda::ops> ops_; // first: every buffer below is released through it
    model_config config_;
    tokenizer vocab_;
    engine_options opt_;
    /// What stays on the host after upload: the token embedding (rows looked up per step).
    model_weights host_weights_;
    std::string formats_;
    std::uint64_t device_weight_bytes_ = 0;
    std::uint64_t projection_bytes_ = 0;
    std::uint64_t logits_bytes_ = 0;
    std::uint64_t device_bytes_ = 0;
    std::uint32_t rope_positions_ = 0;
    std::uint32_t logits_rows_max_ = 0; ///< logits rows per launch (the buffer's rows)
    std::uint64_t scratch_row_ctx_ = 0; ///< rows × max_ctx the attention scratch holds
    std::uint32_t tiles_capacity_ = 0;  ///< entries of the k/v tile offset tables

    // Weights and tables.
    std::vector<device_layer> layers_;
    device_memory output_norm_;
    device_memory logits_w_;   ///< [n_vocab][n_embd] F16
    device_memory rope_table_; ///< [rope_positions_][head_dim]: cos then sin
    device_memory kv_pool_;    ///< kv_cache's layout, offsets in halves

    // Activations for max_batch_tokens rows.
    device_memory x_, cur_, q_, k_, v_, attn_, gate_, up_;
    device_memory acts_q_, acts_scale_;
    device_memory scratch_;
    device_memory logits_;
    pinned_memory embd_host_, logits_host_;

    // The step's tables.
    staged<std::int32_t> pos_, rows_;
    staged<std::uint64_t> k_dst_, v_dst_, k_tiles_, v_tiles_;
    staged<std::uint32_t> table_, n_ctx_;
    staged<std::uint8_t> round_;
    std::vector<attention_group> groups_;
};

} // namespace bitnet::model
