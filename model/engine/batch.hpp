// The contract of one forward step: what goes in (chunks of tokens, one per sequence) and what
// comes out (logits rows, only for the chunks that asked for them). Plain data; the forward pass,
// the KV cache and the batcher all speak it. Prefill chunks and decode tokens share one shape: a
// decode token is a chunk of length 1 (vLLM's "{req_id: num_tokens}" idea).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace bitnet::model {

/// Opaque sequence id chosen by the caller (the batcher). Only equality matters.
using seq_id = std::uint64_t;

/// One sequence's part of a step: `tokens` at positions pos0, pos0+1, ... Its KV cache must
/// already hold positions [0, pos0), so pos0 equals the sequence's current length; the step
/// appends the chunk's K/V after them. A chunk is never empty.
struct seq_chunk {
    seq_id seq = 0;
    std::vector<std::int32_t> tokens;
    std::uint32_t pos0 = 0;  ///< position of tokens[0]
    bool want_logits = true; ///< return the logits of the chunk's last token (for sampling)
};

/// Result of one step: a row of n_vocab floats for every chunk with want_logits, in chunk order.
/// Chunks without want_logits (intermediate prefill pieces) cost no logits work.
struct step_output {
    static constexpr std::size_t no_row = std::numeric_limits<std::size_t>::max();

    /// Rows back to back: row r is logits[r * n_vocab, (r + 1) * n_vocab).
    std::vector<float> logits;
    /// chunk index -> row index in `logits`, or no_row when the chunk did not want logits.
    std::vector<std::size_t> rows_for_chunk;

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
        n += c.want_logits ? 1 : 0;
    return n;
}

} // namespace bitnet::model
