// The contract of one forward step: what goes in (chunks of tokens, one per sequence) and what
// comes out (logits rows, only for the chunks that asked for them). Plain data; the forward pass,
// the KV cache and the batcher all speak it. Prefill chunks and decode tokens share one shape: a
// decode token is a chunk of length 1 (vLLM's "{req_id: num_tokens}" idea).
#pragma once

#include "model/sampling/sampling_params.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::model {

/// Opaque sequence id chosen by the caller (the batcher). Only equality matters.
using seq_id = std::uint64_t;

/// One sequence's part of a step: `tokens` at positions pos0, pos0+1, ... Its KV cache must
/// already hold positions [0, pos0), so pos0 equals the sequence's current length; the step
/// appends the chunk's K/V after them. A chunk is never empty.
///
/// Decode semantics: bitnet.cpp computes a one-token step slightly differently from a prompt
/// step (attention probabilities rounded to F16, docs/GGUF-FORMAT.md §3.6), and near-ties turn that
/// into other tokens. A chunk of exactly one token is computed as a decode. Positions at or after
/// `decoded_from` are computed as a decode too, whatever the chunk's size: they were first
/// computed one token at a time (generated tokens re-prefilled after a preemption, or a stream
/// resumed elsewhere), and computing them again the same way gives the same KV and logits.
struct seq_chunk {
    /// `decoded_from` when no position of the chunk was decoded before (the usual prompt chunk).
    static constexpr std::uint32_t never_decoded = std::numeric_limits<std::uint32_t>::max();

    seq_id seq = 0;
    std::vector<std::int32_t> tokens;
    std::uint32_t pos0 = 0;  ///< position of tokens[0]
    bool want_logits = true; ///< return the logits of the chunk's last token (for sampling)
    /// First position computed with one-token (decode) semantics in a chunk of any size.
    std::uint32_t decoded_from = never_decoded;

    /// Return the logits of EVERY token of the chunk, not only the last: prompt logprobs
    /// (teacher forcing) score each prompt token from the row of the token before it. The rows
    /// come from the same pass, so each equals the row a chunk ending at that token would give
    /// (where the semantics agree, see decodes()); they cost one logits matmul row each.
    bool all_logits = false;

    /// The caller takes only the first maximum of the chunk's (last) row, or with all_logits of
    /// each of its rows (verifying drafts greedily): greedy, with no logprob, penalty or mask.
    /// An engine that keeps a greedy screen (engine_options::greedy_screen) then returns each
    /// such row as -inf everywhere but the greedy token, which holds its exact value; the token
    /// is the one the full row gives, bit for bit.
    bool greedy_only = false;

    /// Whether position `pos` (in this chunk) is computed as a one-token decode step.
    [[nodiscard]] bool decodes(std::uint32_t pos) const noexcept {
        return tokens.size() == 1 || pos >= decoded_from;
    }
};

/// A chunk whose last row the engine samples on its own device (engine::step_sampled), so that
/// only the token (and its logprob) comes back instead of a row of n_vocab logits. The device
/// sampler equals model::sampler for the same row, settings and draw (kernels/cuda/sample.cuh).
struct device_sample {
    /// The most distinct tokens one row's penalty window, counted tokens and bias may touch
    /// together (the engine's staging holds this many per row; more is refused).
    static constexpr std::uint32_t max_adjusted_tokens = 1024;

    std::size_t chunk = 0; ///< index of the chunk in the step's batch
    /// n_logprobs must be 0 (alternatives are host work); without report_logprob the logprob
    /// is not computed (device_sampled::logprob 0)
    sampling_params params;
    double uniform = 0.0; ///< the draw, model::sampler::take_uniform(), when not greedy
    /// The sequence's recent tokens, oldest first: the repetition penalty's window is their last
    /// params.repeat_last_n (all with -1), as model::sampler::sample's `recent`.
    std::vector<std::int32_t> recent;
    /// OpenAI's penalties over `counted` (each occurrence counts once: the generated tokens),
    /// logit -= presence · (count > 0) + frequency · count, applied after the repetition
    /// penalty; and a logit bias, added first. model::sampler has neither (0 and empty: its
    /// chain exactly).
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    std::vector<std::int32_t> counted;
    std::vector<std::pair<std::int32_t, float>> logit_bias;
    bool return_logits = false; ///< the row's logits come back as well
};

/// What the device sampled for a device_sample (same order): the token and its logprob as
/// model::sampler reports them, or why the row could not be sampled (model::sampler's refusals:
/// a NaN logit, no finite maximum).
struct device_sampled {
    std::size_t chunk = 0;
    std::int32_t token = 0;
    float logprob = 0.0f;
    std::string error; ///< empty: sampled
};

/// Result of one step: a row of n_vocab floats for every chunk with want_logits, in chunk order,
/// or, for a chunk with all_logits, one row per token (consecutive, first token first).
/// Chunks without either (intermediate prefill pieces) cost no logits work.
struct step_output {
    static constexpr std::size_t no_row = std::numeric_limits<std::size_t>::max();

    /// Rows back to back: row r is logits[r * n_vocab, (r + 1) * n_vocab).
    std::vector<float> logits;
    /// chunk index -> row index in `logits` of the chunk's LAST token (the one to sample from),
    /// or no_row when the chunk did not want logits.
    std::vector<std::size_t> rows_for_chunk;
    /// chunk index -> row of the chunk's FIRST token when it asked for all_logits (its token j
    /// is row first + j), else no_row. Empty when no chunk of the step asked.
    std::vector<std::size_t> first_row_for_chunk;
    /// engine::step_sampled: one entry per device_sample, in their order. A sampled chunk's row
    /// is in `logits` (rows_for_chunk) only when it asked for return_logits.
    std::vector<device_sampled> sampled;
    /// Rows answered by the engine's greedy screen (greedy_only chunks of an engine that keeps
    /// one): each cost a pass over the screen's copy instead of the whole logits product.
    std::uint32_t screened_rows = 0;

    [[nodiscard]] std::span<const float> row(std::size_t r, std::uint32_t n_vocab) const {
        return {logits.data() + r * n_vocab, n_vocab};
    }
};

/// Tokens in a step (the quantity bounded by max_batch_tokens).
[[nodiscard]] inline std::size_t batch_tokens(std::span<const seq_chunk> batch) noexcept {
    std::size_t n = 0;
    for (const auto& c : batch)
        n += c.tokens.size();
    return n;
}

/// Logits rows a step will return.
[[nodiscard]] inline std::size_t batch_logits_rows(std::span<const seq_chunk> batch) noexcept {
    std::size_t n = 0;
    for (const auto& c : batch)
        n += c.all_logits ? c.tokens.size() : (c.want_logits ? 1 : 0);
    return n;
}

} // namespace bitnet::model
