#include "model/engine/step_bookkeeping.hpp"

#include <unordered_set>

namespace bitnet::model {

result<void> validate_step(std::span<const seq_chunk> batch, const model_config& config,
                           const kv_cache& cache, std::uint32_t max_batch_tokens) {
    const std::size_t total = batch_tokens(batch);
    if (total > max_batch_tokens)
        return error(errc::invalid_argument, "step of " + std::to_string(total) +
                                                 " tokens exceeds max_batch_tokens " +
                                                 std::to_string(max_batch_tokens));
    std::unordered_set<seq_id> seen;
    std::uint64_t blocks = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const seq_chunk& c = batch[i];
        const std::string where =
            "chunk " + std::to_string(i) + " (sequence " + std::to_string(c.seq) + ")";
        if (c.tokens.empty())
            return error(errc::invalid_argument, where + " is empty");
        if (!seen.insert(c.seq).second)
            return error(errc::invalid_argument, where + " appears twice in one step");
        if (c.pos0 != cache.length(c.seq))
            return error(errc::invalid_argument,
                         where + " starts at position " + std::to_string(c.pos0) +
                             " but the sequence holds " + std::to_string(cache.length(c.seq)) +
                             " tokens");
        if (config.n_ctx_train > 0 && c.pos0 + c.tokens.size() > config.n_ctx_train)
            return error(errc::prompt_too_long, where + " would reach " +
                                                    std::to_string(c.pos0 + c.tokens.size()) +
                                                    " tokens, beyond the model's context of " +
                                                    std::to_string(config.n_ctx_train));
        for (std::int32_t id : c.tokens)
            if (id < 0 || static_cast<std::uint32_t>(id) >= config.n_vocab)
                return error(errc::invalid_argument, where + " has token id " + std::to_string(id) +
                                                         " outside the vocabulary of " +
                                                         std::to_string(config.n_vocab));
        blocks += cache.blocks_needed(c.seq, static_cast<std::uint32_t>(c.tokens.size()));
    }
    if (blocks > cache.n_blocks_free())
        return error(errc::kv_exhausted, "the step needs " + std::to_string(blocks) +
                                             " KV blocks, " +
                                             std::to_string(cache.n_blocks_free()) + " are free");
    return {};
}

void roll_back_step(kv_cache& cache, std::span<const seq_chunk> appended) noexcept {
    for (const seq_chunk& c : appended) {
        if (c.pos0 == 0)
            cache.free(c.seq); // it did not exist before this step
        else
            (void)cache.truncate(c.seq, static_cast<std::uint32_t>(c.tokens.size()));
    }
}

// Each row is the final norm of its token's residual and one row of the logits matmul, whatever
// the other rows: a chunk's last row is the same bits with or without all_logits.
std::vector<std::size_t> select_logits_rows(std::span<const seq_chunk> batch, step_output& out) {
    out.rows_for_chunk.assign(batch.size(), step_output::no_row);
    out.first_row_for_chunk.clear();
    std::vector<std::size_t> rows; // token index in the step, per logits row
    std::size_t t = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const std::size_t n = batch[i].tokens.size();
        if (batch[i].all_logits) {
            if (out.first_row_for_chunk.empty())
                out.first_row_for_chunk.assign(batch.size(), step_output::no_row);
            out.first_row_for_chunk[i] = rows.size();
            for (std::size_t j = 0; j < n; ++j)
                rows.push_back(t + j);
        }
        t += n;
        if (batch[i].want_logits) {
            out.rows_for_chunk[i] = batch[i].all_logits ? rows.size() - 1 : rows.size();
            if (!batch[i].all_logits)
                rows.push_back(t - 1);
        }
    }
    return rows;
}

} // namespace bitnet::model
