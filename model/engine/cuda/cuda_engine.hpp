// The CUDA implementation of the engine facade: the forward pass of docs/GGUF-FORMAT.md §3.4 run
// entirely through a kernels::cuda::ops (device memory, copies and the kernels of
// kernels/cuda/kernel_args.hpp, queued in order on one stream). The same code runs on a GPU
// (make_device_ops) and on the host's simulated grid (make_simulated_ops), where every kernel body
// runs as host loops: that is what CI checks against the CPU engine, on machines without a GPU.
//
// What lives where:
//   - device: every projection in the GPU ternary layout (ternary_gpu_layout.hpp), Q/K/V stacked
//     as one matrix and gate/up as another (one launch each), the norms, the F16 logits matrix
//     (also the token embedding of a tied F16 model: its rows are gathered on the device), the
//     RoPE cos/sin table of every position the KV pool can hold, the KV pool, the activations of
//     max_batch_tokens tokens and the sampler's scratch (allocated once at load);
//   - host: the token embedding only when it is not the tied F16 logits matrix, the KV cache's
//     bookkeeping (model::kv_cache in device mode: block tables, reference counts, prefix index,
//     forks) and pinned staging buffers for the step's tables, samples and logits.
// A step: validate and append (step_bookkeeping, as the CPU engine) → the copy-on-write copies the
// cache recorded → the step's tables into their fixed device buffers → a launch plan (see below)
// → download the sampled tokens and the logits rows asked for. Per layer the plan is 10 launches:
// norm+quantize, the Q/K/V product, RoPE+KV write, attention (a second kernel for long
// contexts), sub-norm+quantize, the output product adding into the residual, norm+quantize, the
// gate/up product, gate+sub-norm+quantize, the down product adding into the residual; then the
// final norm of the wanted rows, the F16 logits and, for step_sampled, the device sampler.
//
// Recorded decode steps: a step whose chunks are all one-token decodes wanting logits (the steady
// state of a server) runs a plan recorded once per bucket (rows rounded up to a power of two,
// the longest context to a power of two, with or without sampling) and replayed after: a CUDA
// graph on a device, the same launches one by one on the simulated grid. The rows past the
// step's own are padding: token 0 at position 0, its K/V written to a trash block past the
// cache's pool, its outputs never read. A row's result does not depend on the rows beside it nor
// on the scratch's context bound, so a replayed step equals the step launched for its exact size
// bit for bit (tests/engine/cuda_engine_graph_test.cpp).
#pragma once

#include "kernels/cuda/ops.hpp"
#include "model/engine/cuda/device_memory.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_weights.hpp"
#include "model/engine/paged_kv_engine.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

namespace bitnet::model {

/// Caps on the buffers that would otherwise grow with max_batch_tokens × context (the attention
/// scores' scratch) or × vocabulary (the logits, the sampler's scratch): a step past them runs its
/// attention, logits or sampling in several launches. Tests lower them to exercise that on a tiny
/// model. And which steps are recorded.
struct cuda_buffer_caps {
    std::uint64_t logits_bytes = 64ull << 20;            ///< 130 rows of a 128k vocabulary
    std::uint64_t attention_scratch_bytes = 64ull << 20; ///< at least one row at full context
    /// The device sampler's scratch: a row of floats and one of sort keys per row sampled in
    /// one launch (81 rows of a 128k vocabulary; at least one).
    std::uint64_t sampling_bytes = 128ull << 20;
    /// Decode steps of at most this many sequences run recorded plans (a CUDA graph on a device);
    /// 0: every step launch by launch. Rounded down to a power of two.
    std::uint32_t recorded_rows = 256;
    /// Gather the embeddings on the device when the table is the tied F16 logits matrix; false
    /// keeps the host lookup (the path of untied or quantized tables; tests cover it so).
    bool gather_embeddings = true;
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
    [[nodiscard]] bool samples_on_device() const noexcept override { return true; }
    [[nodiscard]] result<step_output> step_sampled(std::span<const seq_chunk> batch,
                                                   std::span<const device_sample> samples) override;

    /// What the last step ran: kernels launched (a replayed graph counts its kernels), whether
    /// it replayed a recorded plan, and the rows it computed (padded to the bucket when it did).
    struct step_stats {
        std::uint64_t kernels = 0;
        std::uint64_t graphs = 0;
        bool replayed = false;
        std::uint32_t rows = 0;
    };
    [[nodiscard]] const step_stats& last_step() const noexcept { return last_step_; }
    /// Plans recorded so far (one per bucket met; at most log2(recorded_rows) + 1 row buckets ×
    /// the context buckets × 2).
    [[nodiscard]] std::size_t recorded_plans() const noexcept { return plans_.size(); }

    /// Bytes the host keeps for the engine: the token embedding, for lookups, unless the device
    /// gathers it from the tied F16 logits matrix (then 0).
    [[nodiscard]] std::uint64_t host_bytes() const noexcept { return host_weights_.owned_bytes; }
    /// Bytes of device memory the engine allocated at load (weights, tables, KV pool, buffers).
    [[nodiscard]] std::uint64_t device_bytes() const noexcept { return device_bytes_; }

private:
    friend result<std::unique_ptr<engine>> load_cuda_engine(const engine_options&,
                                                            std::unique_ptr<kernels::cuda::ops>,
                                                            const cuda_buffer_caps&);

    /// One BitLinear on the device, or several of the same K stacked (Q/K/V, gate/up): rows
    /// from seg_begin[i] on have their own scale and multiplier (ternary_gemm_args).
    struct device_projection {
        device_memory w; ///< GPU layout
        std::uint32_t rows = 0;
        std::uint32_t cols = 0;
        float scale = 0.0f;
        float out_multiplier = 1.0f;
        std::uint32_t seg_begin[2] = {0, 0};
        float seg_scale[2] = {0.0f, 0.0f};
        float seg_mult[2] = {1.0f, 1.0f};
    };
    struct device_layer {
        device_memory attn_norm, attn_sub_norm, ffn_norm, ffn_sub_norm; ///< sub-norms may be empty
        device_projection qkv, wo, gate_up, down;
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
    /// Which recorded plan a decode step replays.
    struct plan_key {
        std::uint32_t rows = 0;
        std::uint32_t ctx = 0;
        bool sampling = false;
        auto operator<=>(const plan_key&) const = default;
    };
    /// The step as the device runs it (cuda_engine.cpp's prepare_step fills it).
    struct step_layout {
        std::uint32_t T = 0;         ///< rows computed (the bucket's when recorded)
        std::uint32_t real_rows = 0; ///< the batch's tokens
        bool recorded = false;
        plan_key key;
        std::vector<std::size_t> logit_rows; ///< step row of each logits row computed
        std::vector<bool> download;          ///< per logits row: its logits go to the host
        /// Per logits row: the sampler slot drawing from it, or -1; per sample: its slot.
        std::vector<std::int32_t> sample_of_row;
        std::vector<std::uint32_t> slot_of_sample;
    };

    cuda_engine(std::unique_ptr<kernels::cuda::ops> device, model_config config, tokenizer vocab,
                kv_cache cache, const engine_options& opt);

    // Load (cuda_engine_load.cpp): everything allocated once, weights uploaded.
    [[nodiscard]] device_memory alloc(std::size_t bytes);
    template <class T>
    [[nodiscard]] device_memory upload_vector(const std::vector<T>& v);
    [[nodiscard]] device_projection upload_stacked(std::initializer_list<const projection*> parts);
    void upload_weights(model_weights& w);
    void size_step_buffers(const cuda_buffer_caps& caps);
    /// Sizes (and unless `dry`, allocates) every per-step buffer; returns their device bytes.
    std::uint64_t plan_buffers(const cuda_buffer_caps& caps, bool dry);

    // Step (cuda_engine.cpp).
    [[nodiscard]] result<step_output> run_step(std::span<const seq_chunk> batch,
                                               std::span<const device_sample> samples);
    [[nodiscard]] step_output forward(std::span<const seq_chunk> batch,
                                      std::span<const device_sample> samples);
    void copy_pending_blocks();
    void settle_after_failure() noexcept;
    step_layout prepare_step(std::span<const seq_chunk> batch,
                             std::span<const device_sample> samples,
                             const std::vector<std::size_t>& rows, const step_output& out,
                             std::uint32_t& n_tiles);
    std::uint32_t fill_rows(std::span<const seq_chunk> batch, std::uint32_t& n_tiles);
    void pad_rows(std::uint32_t from, std::uint32_t to, std::uint32_t trash_tile);
    void plan_attention_groups(const step_layout& L);
    void fill_samples(std::span<const device_sample> samples, const step_layout& L);
    void upload_step(const step_layout& L, std::uint32_t n_tiles);
    void fetch_logits(const step_layout& L, std::uint32_t r0, std::uint32_t n, step_output& out);
    void collect_samples(std::span<const device_sample> samples, const step_layout& L,
                         step_output& out);

    // Plans (cuda_engine_plan.cpp): the launches of a step, recorded.
    void record_layers(kernels::cuda::launch_plan& p, std::uint32_t T) const;
    void record_attention(kernels::cuda::launch_plan& p, std::uint32_t l, std::uint32_t T) const;
    void record_ffn(kernels::cuda::launch_plan& p, std::uint32_t l, std::uint32_t T) const;
    void record_norm_quantize(kernels::cuda::launch_plan& p, const float* x, std::uint32_t ld,
                              const float* u, const device_memory& weight, std::uint32_t T,
                              std::uint32_t n) const;
    void record_product(kernels::cuda::launch_plan& p, const device_projection& w, std::uint32_t T,
                        float* y, bool accumulate) const;
    /// Logits rows [r0, r0 + n) of the step (gathered by rows_), and the samples drawn from them.
    void record_logits(kernels::cuda::launch_plan& p, std::uint32_t r0, std::uint32_t n,
                       const step_layout& L) const;
    void record_sampling(kernels::cuda::launch_plan& p, std::uint32_t r0, std::uint32_t n,
                         const step_layout& L) const;

    std::unique_ptr<kernels::cuda::ops> ops_; // first: every buffer below is released through it
    model_config config_;
    tokenizer vocab_;
    engine_options opt_;
    /// What stays on the host after upload: the token embedding when the device cannot gather it.
    model_weights host_weights_;
    bool device_embedding_ = false; ///< tied F16 logits: embeddings gathered from logits_w_
    std::string formats_;
    std::uint64_t device_weight_bytes_ = 0;
    std::uint64_t projection_bytes_ = 0;
    std::uint64_t logits_bytes_ = 0;
    std::uint64_t device_bytes_ = 0;
    std::uint32_t rope_positions_ = 0;
    std::uint32_t logits_rows_max_ = 0; ///< logits rows per launch (the buffer's rows)
    std::uint32_t sample_rows_max_ = 0; ///< rows per sampler launch (its scratch's rows)
    std::uint32_t sort_keys_ = 0;       ///< the sampler's sort size: n_vocab up to a power of 2
    std::uint64_t scratch_row_ctx_ = 0; ///< rows × max_ctx the attention scratch holds
    std::uint32_t tiles_capacity_ = 0;  ///< entries of the k/v tile offset tables
    std::uint32_t adjust_capacity_ = 0; ///< sampler penalty/bias entries per step
    std::uint32_t recorded_rows_ = 0;   ///< the largest recorded bucket (0: none)
    std::uint32_t trash_block_ = 0;     ///< the padding rows' KV block, past the cache's pool

    // Weights and tables.
    std::vector<device_layer> layers_;
    device_memory output_norm_;
    device_memory logits_w_;   ///< [n_vocab][n_embd] F16
    device_memory rope_table_; ///< [rope_positions_][head_dim]: cos then sin
    device_memory kv_pool_;    ///< kv_cache's layout, offsets in halves, and the trash block

    // Activations for max_batch_tokens rows.
    device_memory x_, qkv_, attn_, gate_up_;
    device_memory acts_q_, acts_scale_;
    device_memory split_sums_, split_counters_; ///< the split-K workspace (zero between launches)
    device_memory scratch_;
    device_memory logits_;
    device_memory sample_work_, sample_keys_;
    pinned_memory embd_host_, logits_host_;

    // The step's tables.
    staged<std::int32_t> tokens_, pos_, rows_, sample_rows_;
    staged<std::uint64_t> k_dst_, v_dst_, k_tiles_, v_tiles_;
    staged<std::uint32_t> table_, n_ctx_;
    staged<std::uint8_t> round_;
    staged<kernels::cuda::sample_row_params> sample_params_;
    staged<kernels::cuda::sample_adjust> sample_adjust_;
    staged<kernels::cuda::sample_result> sample_out_;
    std::vector<attention_group> groups_;
    std::uint32_t sample_slots_ = 0;        ///< the step's sampler rows
    std::uint32_t adjust_entries_ = 0;      ///< the step's penalty/bias entries
    std::uint32_t logits_rows_fetched_ = 0; ///< rows of out.logits filled so far

    std::map<plan_key, kernels::cuda::launch_plan> plans_;
    step_stats last_step_;
};

} // namespace bitnet::model
