// The executor's state, shared by its two halves: the actor and its steps (executor.cpp) and
// prefix caching's attach and publish around a step (executor_prefix.cpp). Internal to actors/.
#pragma once

#include "common/memory_tables.hpp"
#include "messages/interfaces.hpp"
#include "model/constrain/mask_worker.hpp"
#include "model/constrain/token_constraint.hpp"
#include "model/constrain/tool_call_opener.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/placement/device_choice.hpp"
#include "model/sampling/sampler.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace bitnet::actors::executor_detail {

/// What the executor keeps per live sequence: its sampler (RNG state continues across steps)
/// and its tokens so far (prompt and generated, for the repetition penalty).
struct seq_state {
    model::sampler sampler;
    std::vector<msg::token_id> tokens;
    /// Structured output: where the sequence stands in its schema (null: unconstrained).
    std::optional<model::constrain::token_constraint> constraint;
    /// Generated tokens the constraint has still to take (a sequence re-prefilled after a
    /// preemption replays them once its whole prefix is back).
    std::uint32_t replay = 0;
    /// Prefix caching: the leading whole blocks computed with prompt semantics (offered to the
    /// cache as they fill), how many of them may come from the cache, and whether every block so
    /// far did (a sequence attaches only until its first computed block).
    std::vector<msg::token_id> prefix_tokens;
    std::uint32_t reuse_blocks = 0;
    bool attaching = false;
    std::uint32_t attached_to = 0;  ///< KV length after the last attach (may pass the chunk)
    std::uint64_t prefix_scope = 0; ///< the cache scope its blocks are looked up and offered in
    /// Draft model: positions of this sequence its KV holds (executor_draft.cpp).
    std::uint32_t draft_kv = 0;
    /// Structured output (executor_masks.cpp): the mask of the constraint's current state on the
    /// mask worker (null when cached or not asked for), and the logits row of a sample deferred
    /// until that mask is ready (empty when none).
    std::shared_ptr<model::constrain::mask_worker::job> mask_job{};
    std::vector<float> pending_row{};
    /// An auto tool call not opened yet (step_chunk::schema_opener): the call's compiled schema,
    /// and the opener looked for in the sampled tokens' pieces. Once the model writes it, the
    /// schema becomes `constraint` (starting with the bytes after the opener) and this goes.
    struct lazy_schema {
        std::shared_ptr<const model::constrain::compiled_constraint> compiled;
        model::constrain::call_splitter opener;
    };
    std::optional<lazy_schema> lazy{};
    /// The cached mask of the constraint's current state, as the step's prefetch found it
    /// (null when not cached then): the sample takes it without a second lookup.
    std::shared_ptr<const model::constrain::token_mask> ready_mask{};
    /// Whose masks these are (step_chunk::tenant): the mask worker's turns go by it.
    std::string tenant{};
    /// CPU time of the masks computed for it so far (executor_order::mask_ms_per_token).
    std::int64_t mask_cpu_ns = 0;

    /// Masked now, or may be from a later token on: its samples are drawn on the host, one
    /// token at a time through sample_into.
    [[nodiscard]] bool schema_bound() const noexcept { return constraint || lazy; }
};

struct executor_state {
    memory::live_counter<memory::live_kind::executor> counted; ///< memory::live_count
    std::unique_ptr<model::engine> engine;
    msg::executor_order order;
    model::device_choice device;
    std::unordered_map<std::uint64_t, seq_state> seqs;
    std::vector<std::int32_t> score_order; ///< scratch of prompt scoring's top alternatives
    std::vector<float> masked;             ///< scratch: a logits row with the schema's mask applied
    /// Set by the supervisor when this executor is replaced (a stuck step): schema loops stop.
    std::shared_ptr<model::constrain::cancel_token> cancel;
    std::string kernels; ///< the ops' kernel families, joined (step_result::kernels)
    /// Speculative decoding: the draft model (executor_order::draft_model), null when none.
    std::unique_ptr<model::engine> draft;
    /// Structured output: masks not in the cache are computed here, off the step's path.
    std::unique_ptr<model::constrain::mask_worker> masks =
        std::make_unique<model::constrain::mask_worker>();
    /// The step being run: when it started, and until when its samples wait for masks.
    std::chrono::steady_clock::time_point step_start{};
    std::chrono::steady_clock::time_point mask_deadline{};
    bool step_has_pass = false;
    static inline const char* name = "executor";
};

/// Structured output (executor_masks.cpp). Before the pass: the masks the step's constrained
/// samples need that are not cached go to the mask worker, to be computed during the pass.
void prefetch_masks(executor_state& st, const msg::step_batch& batch);
/// The logits row of a constrained sequence with every token its schema does not allow at -inf,
/// or nothing when its mask is not ready within the step's mask budget (the sample is deferred).
/// Errors when no token fits, or the mask could not be computed.
[[nodiscard]] result<std::optional<std::span<const float>>>
masked_row(executor_state& st, seq_state& s, std::span<const float> row);
/// Draws `seq`'s next token from `logits` with its sampler into `out`, under its schema's mask
/// when it has one (the matcher then takes the token). False when the mask was not ready within
/// the step's budget: the sample is deferred (the row kept in s.pending_row, `seq` in
/// out.deferred) and nothing is drawn, so the sampler's next draw is the same later.
/// `n_generated`: how many of s.tokens' last entries the sequence generated (step_chunk::n_sampled,
/// plus the drafts accepted before this row): the presence and frequency penalties count those,
/// min_tokens compares with it.
[[nodiscard]] result<bool> sample_into(executor_state& st, seq_state& s, std::uint64_t seq,
                                       std::span<const float> logits, std::size_t n_generated,
                                       msg::step_result& out);
/// A sample deferred in an earlier step (step_chunk::resume_sample), drawn from the row kept for
/// it once its mask is ready (or deferred again). Errors fail the sequence.
[[nodiscard]] result<void> resume_sample(executor_state& st, const msg::step_chunk& c,
                                         msg::step_result& out);
/// After the pass: until when the step's samples wait for masks (limits::max_step_mask_ms, or
/// longer when the step had no pass and nobody waits on it).
void set_mask_deadline(executor_state& st);

/// Prefix caching: attaches the cached whole blocks at the start of `c`'s chunk and returns what
/// is left to compute (executor_prefix.cpp has the rules); hits go to `out`.
[[nodiscard]] model::seq_chunk attach_cached(executor_state& st, const msg::step_chunk& c,
                                             msg::step_result& out);
/// Prefix caching after every chunk attached: sequences whose whole chunk came from the cache
/// attach further cached blocks past it.
void extend_cached(executor_state& st, const msg::step_batch& batch,
                   std::span<const model::seq_chunk> parts, std::span<const std::size_t> picked,
                   msg::step_result& out);
/// Offers the blocks `seq` has filled with prompt positions to the prefix cache.
void publish_prefix(executor_state& st, std::uint64_t seq);

/// The draft model of `order` (executor_draft.cpp), loaded on the CPU beside `main`: refused
/// unless its vocabulary is main's, piece for piece.
[[nodiscard]] result<std::unique_ptr<model::engine>>
load_draft_model(const msg::executor_order& order, const model::engine& main);
/// After a step's samples: the draft model's greedy proposals for every chunk of `batch` with
/// draft_next, into out.drafts.
void propose_drafts(executor_state& st, const msg::step_batch& batch, msg::step_result& out);

/// Sampling on the engine's device (executor_device_sampling.cpp): one device_sample for each
/// chunk of the pass `picked` whose draw the device can make (none when the engine cannot).
[[nodiscard]] std::vector<model::device_sample> device_samples(const executor_state& st,
                                                               const msg::step_batch& batch,
                                                               std::span<const std::size_t> picked);
/// The device's draw for the pass's chunk k, or null when the host samples it.
[[nodiscard]] const model::device_sampled* device_sampled_for(const model::step_output& so,
                                                              std::size_t k);
/// The device's draw for `c` taken as sample_into takes the host's: the chunk joins the
/// sequence's tokens, the sampler's draw is used up, the token goes to `out`; the device's
/// refusal (a NaN row) is the sequence's error, as the host sampler's is.
[[nodiscard]] result<void> take_device_sample(executor_state& st, const msg::step_chunk& c,
                                              const model::device_sampled& d,
                                              msg::step_result& out);

} // namespace bitnet::actors::executor_detail
