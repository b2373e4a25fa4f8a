// The inference engine facade: one loaded model (weights copied or repacked once), its
// tokenizer, a paged KV cache and a compute thread pool. `step` runs one batched forward pass over
// many sequences (prefill chunks and decode tokens mixed) and returns the logits rows that were
// asked for (the step types live in batch.hpp). Not thread-safe: one owner (the executor's
// thread) calls it.
#pragma once

#include "common/error.hpp"
#include "model/engine/batch.hpp"
#include "model/engine/engine_options.hpp"
#include "model/engine/kernel_choice.hpp"
#include "model/engine/model_config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace bitnet::model {

class tokenizer;

class engine {
public:
    /// Opens, validates and prepares the model (repacking weights where the kernels need it) on
    /// the CPU engine (defined beside it, cpu/cpu_engine_load.cpp; other devices: placement/).
    [[nodiscard]] static result<std::unique_ptr<engine>> load(const engine_options& opt);
    virtual ~engine() = default;

    [[nodiscard]] virtual const model_config& config() const noexcept = 0;
    [[nodiscard]] virtual const tokenizer& vocab() const noexcept = 0;
    /// Formats, kernel ISA, repacking done at load, thread count: for logs and /health.
    [[nodiscard]] virtual std::string describe() const = 0;
    /// Which kernel family runs each op and how it was chosen (measured at load, or pinned).
    [[nodiscard]] virtual std::vector<kernel_choice> kernel_choices() const { return {}; }
    /// Bytes of model weights resident (copied and repacked at load) and of the KV pool.
    [[nodiscard]] virtual std::uint64_t weight_bytes() const noexcept = 0;
    [[nodiscard]] virtual std::uint64_t kv_pool_bytes() const noexcept = 0;
    /// Weight bytes one decode token streams from memory (projections and logits matrix): the
    /// numerator of the decode roofline.
    [[nodiscard]] virtual std::uint64_t bytes_per_decode_token() const noexcept {
        return weight_bytes();
    }

    // KV cache: a sequence exists from its first step until released.
    [[nodiscard]] virtual std::uint32_t kv_block_tokens() const noexcept = 0;
    [[nodiscard]] virtual std::uint32_t kv_blocks_total() const noexcept = 0;
    [[nodiscard]] virtual std::uint32_t kv_blocks_free() const noexcept = 0;
    /// Blocks a sequence of `n_tokens` occupies (for admission arithmetic).
    [[nodiscard]] std::uint32_t kv_blocks_for(std::uint32_t n_tokens) const noexcept {
        return (n_tokens + kv_block_tokens() - 1) / kv_block_tokens();
    }
    virtual void release(seq_id seq) = 0;
    [[nodiscard]] virtual result<void> fork(seq_id from, seq_id to) = 0;
    /// Speculative decoding: drops the last `n_tokens` positions of `seq` (draft tokens its
    /// verification rejected), returning blocks no longer needed; the sequence continues from the
    /// shorter length, as if those positions had never been computed. Only positions appended
    /// by decode steps may be dropped (prefix-cached blocks hold prompt positions only).
    /// invalid_argument when `seq` is shorter, not_found when unknown, unsupported by an engine
    /// that cannot (the batcher then never drafts for it).
    [[nodiscard]] virtual result<void> truncate(seq_id seq, std::uint32_t n_tokens) {
        (void)seq, (void)n_tokens;
        return error(errc::unsupported, "this engine cannot drop KV positions");
    }

    // Automatic prefix caching (kv_cache.hpp, "Prefix caching"). `tokens` are always a
    // sequence's tokens from position 0; `scope` is the cache scope (0 = shared by all): blocks
    // match only within one scope. An engine without a prefix cache caches nothing.
    /// Leading whole blocks of `tokens` the cache holds.
    [[nodiscard]] virtual std::uint32_t cached_prefix_blocks(std::span<const std::int32_t> tokens,
                                                             std::uint64_t scope = 0) const {
        (void)tokens, (void)scope;
        return 0;
    }
    /// Extends `seq` (unknown, or holding whole attached blocks) with cached blocks of `tokens`,
    /// up to `max_blocks` blocks in all, at most `max_parked` of them unreferenced ones (each
    /// takes a block off kv_blocks_free); returns how many it attached. Their KV is not computed.
    virtual std::uint32_t attach_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                                        std::uint32_t max_blocks, std::uint32_t max_parked,
                                        std::uint64_t scope = 0) {
        (void)seq, (void)tokens, (void)max_blocks, (void)max_parked, (void)scope;
        return 0;
    }
    /// Free blocks a chunk of `n_tokens` for `seq` takes (a copy-on-write copy included).
    [[nodiscard]] virtual std::uint32_t kv_blocks_needed(seq_id seq, std::uint32_t n_tokens) const {
        (void)seq;
        return kv_blocks_for(n_tokens);
    }
    /// Offers the whole blocks of `seq` covered by `tokens` to the cache. The caller vouches
    /// they were computed with prompt semantics (never as one-token decode steps).
    virtual void publish_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                                std::uint64_t scope = 0) {
        (void)seq, (void)tokens, (void)scope;
    }

    /// One forward pass. Fails without side effects on the KV cache when a chunk's position does
    /// not continue its sequence, a token id is out of range, the batch exceeds max_batch_tokens,
    /// or KV blocks run out (errc::kv_exhausted); a pass that fails part-way (an allocation
    /// throwing) rolls every sequence's cache back too, so the caller may rerun the others.
    [[nodiscard]] virtual result<step_output> step(std::span<const seq_chunk> batch) = 0;

    /// Whether step_sampled samples on the engine's device (the CUDA engine).
    [[nodiscard]] virtual bool samples_on_device() const noexcept { return false; }
    /// step(), with the last rows of the chunks `samples` name sampled on the device into
    /// step_output::sampled; those rows' logits come back only when a sample asks. unsupported
    /// where samples_on_device() is false; invalid_argument for a sample naming no chunk that
    /// wants logits, or asking for alternatives (n_logprobs).
    [[nodiscard]] virtual result<step_output> step_sampled(std::span<const seq_chunk> batch,
                                                           std::span<const device_sample> samples) {
        (void)batch, (void)samples;
        return error(errc::unsupported, "this engine does not sample on a device");
    }
};

} // namespace bitnet::model
