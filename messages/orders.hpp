// The orders a supervisor spawns a model version's actors from: plain data (registered with CAF's
// type ids and serializable, no closures), so that the same order can start an executor or a
// batcher in this process or, later, on another node; where a version runs (local CPU, local GPU,
// a remote node) is a value in its order, not code.
#pragma once

#include "messages/batch_policy.hpp"
#include "model/engine/engine_options.hpp"
#include "model/gguf/regular_file.hpp"

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::msg {

/// Everything an executor needs to build its engine.
struct executor_order {
    std::string alias; ///< the model alias, for logs
    /// Which engine builds from `engine`: "gguf" (model::engine::load, the real one) or a kind
    /// the process registered (actors/executor/engine_kinds.hpp; tests register stand-in engines).
    std::string engine_kind = "gguf";
    model::engine_options engine; ///< engine.model_path is the model file
    /// Where it runs: "auto" (the first CUDA device when one is usable, else the CPU), "cpu",
    /// "cuda" (= cuda:0), "cuda:N" or "sim:N" (actors/supervisor/device_placements.hpp).
    std::string device = "auto";
    /// End-of-generation ids reported in executor_info for the batcher's policy; empty = the
    /// engine tokenizer's eog_ids().
    std::vector<token_id> eog_ids;
    std::string file_sha256; ///< the SHA-256 the supervisor hashed the file to (listings)
    /// The file's identity when it was hashed and verified: after its load the executor refuses
    /// the engine unless the path still names that file, so the version's id and checks describe
    /// the bytes it runs. All zero: not checked.
    model::file_identity file;
    /// Why this placement, when the supervisor chose it (e.g. "fallback from cuda:0: ..."):
    /// reported as executor_info::device_reason. Empty: the executor says why itself.
    std::string device_reason;
    /// Speculative decoding: a smaller GGUF with the same vocabulary whose greedy tokens are
    /// drafts for this model's sequences (loaded beside it, on the CPU); empty = none.
    std::string draft_model;
    /// Structured output: the CPU time of token masks one sequence may take, on average per
    /// token it samples (server_config::mask_ms_per_token), beyond mask_ms_up_front; past it
    /// the sequence ends with an error naming mask_ms_per_token.
    std::uint32_t mask_ms_per_token = 100;
    /// Allowed before the first token on top of that: one mask's own bound
    /// (model::constrain::limits::max_mask_ms), so a schema whose first mask is costly but
    /// within that bound still starts. Tests set 0 to meet the per-token budget at once.
    std::uint32_t mask_ms_up_front = 2000;
};

/// Everything a batcher needs besides its executor and, in this process, its tokenizer (a
/// pointer to the version's text side, handed beside the order: actors/batcher/batcher.hpp).
struct batcher_order {
    std::string model;         ///< alias, for completions and stats
    std::string model_version; ///< reported in completions
    batch_policy policy;
    std::uint32_t default_timeout_ms = 120000;
    std::int64_t step_timeout_ms = 60000; ///< a step slower than this is a failure
    /// Sent (step_atom, std::uint32_t sequences, std::int64_t microseconds) after every step (the
    /// server's step metrics); null = nobody.
    caf::actor step_observer;
    /// The supervisor (as a plain handle): told stalled(executor, why) when a step passes
    /// step_timeout_ms; null = nobody (the step's sequences still fail).
    caf::actor watchdog;
    /// How the version's chat template writes tool calls (model::tool_call_syntax as a number;
    /// 0 = none): what an auto tool-call request is decoded under.
    std::uint8_t tool_syntax = 0;
    /// Test hook (server_config::test_tool_call_opener_bias): a logit bias on a one-token call
    /// opener in auto tool-call turns; 0 = none.
    float opener_bias = 0.0f;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_policy& x) {
    return f(caf::meta::type_name("batch_policy"), x.max_batch_tokens, x.decoding_batch_tokens,
             x.max_batch_seqs, x.kv_block_tokens, x.kv_blocks_total, x.n_ctx, x.weights, x.eog_ids,
             x.prefix_caching, x.tenant_share_percent, x.spec_max_draft, x.spec_step_tokens,
             x.spec_by_default, x.spec_draft_model);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, executor_order& x) {
    return f(caf::meta::type_name("executor_order"), x.alias, x.engine_kind, x.engine, x.device,
             x.eog_ids, x.file_sha256, x.file, x.device_reason, x.draft_model, x.mask_ms_per_token,
             x.mask_ms_up_front);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batcher_order& x) {
    return f(caf::meta::type_name("batcher_order"), x.model, x.model_version, x.policy,
             x.default_timeout_ms, x.step_timeout_ms, x.step_observer, x.watchdog, x.tool_syntax,
             x.opener_bias);
}

/// A version's loader thread to its supervisor: how far load number `serial` got (`stage`:
/// validating, warming, ...), or why it failed (`failure`, empty while it goes on).
struct load_progress {
    std::uint64_t serial = 0;
    std::string stage;
    std::string failure;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, load_progress& x) {
    return f(caf::meta::type_name("load_progress"), x.serial, x.stage, x.failure);
}

/// The supervisor to admission: nothing serves `alias` (its last version failed to load, or its
/// restarts ran out), and why; requests for it are refused with that until a route comes.
struct alias_failure {
    std::string alias;
    std::string why;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, alias_failure& x) {
    return f(caf::meta::type_name("alias_failure"), x.alias, x.why);
}

} // namespace bitnet::msg

namespace bitnet::model {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_options& x) {
    return f(caf::meta::type_name("engine_options"), x.model_path, x.n_threads, x.kv_budget_bytes,
             x.kv_block_tokens, x.max_batch_tokens, x.q8_logits, x.tl_kernel_config, x.kv_q8_0,
             x.greedy_screen, x.greedy_screen_rows);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_identity& x) {
    return f(caf::meta::type_name("file_identity"), x.device, x.inode, x.size, x.mtime_ns,
             x.ctime_ns);
}

} // namespace bitnet::model
