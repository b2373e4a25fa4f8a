// What every engine's step does around its forward pass, whatever computes it (the CPU engine,
// the CUDA engine): the batch's validation against the model and the KV cache, the KV growth
// and its undoing when the pass fails, and which logits rows the pass must return. One copy, so
// that engines on different devices accept, refuse and answer a batch identically.
#pragma once

#include "common/error.hpp"
#include "model/engine/batch.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_config.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace bitnet::model {

/// Checks a whole batch before anything changes: max_batch_tokens, empty or repeated chunks,
/// positions that do not continue their sequence, the model's context, token ids, free KV blocks.
[[nodiscard]] result<void> validate_step(std::span<const seq_chunk> batch, const model_config& c,
                                         const kv_cache& cache, std::uint32_t max_batch_tokens);

/// Undoes the KV growth of `appended` (chunks whose rows were appended by this step).
void roll_back_step(kv_cache& cache, std::span<const seq_chunk> appended) noexcept;

/// Appends every chunk's rows to the cache and runs `forward()` (returning the step_output). A
/// failed append or a forward that throws undoes that growth, so a failed step leaves no sequence
/// changed and the caller may run the others again; `after_failure()` then runs (after the
/// rollback), for an engine that must settle its own state. The batch must be validated.
template <class Forward, class AfterFailure>
[[nodiscard]] result<step_output> append_and_run(kv_cache& cache, std::span<const seq_chunk> batch,
                                                 Forward&& forward, AfterFailure&& after_failure) {
    std::size_t appended = 0;
    try {
        for (; appended < batch.size(); ++appended) {
            const seq_chunk& c = batch[appended];
            auto r = cache.append(c.seq, static_cast<std::uint32_t>(c.tokens.size()));
            if (!r) {
                roll_back_step(cache, batch.first(appended));
                after_failure();
                return error(errc::internal,
                             "KV append failed after validation: " + r.error().message);
            }
        }
        return forward();
    } catch (const std::exception& e) {
        roll_back_step(cache, batch.first(appended));
        after_failure();
        return error(errc::internal, std::string("the forward pass failed: ") + e.what());
    }
}

/// The logits rows a step computes: for every chunk with all_logits each of its tokens, and for
/// every chunk wanting logits its last token, in chunk order. Returns the token index in the step
/// of each row and fills `out`'s rows_for_chunk and first_row_for_chunk to match.
[[nodiscard]] std::vector<std::size_t> select_logits_rows(std::span<const seq_chunk> batch,
                                                          step_output& out);

} // namespace bitnet::model
