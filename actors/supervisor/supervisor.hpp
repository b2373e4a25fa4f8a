// The supervisor: owns every model alias and its versions (one executor + one batcher + one text
// actor each), monitors them, and runs the model lifecycle (docs/ARCHITECTURE.md §2):
//   load:     loading (SHA-256 of the file) -> validating (verify_model's checks, the memory
//             budget, the engine's own load) -> warming (a short generation, logits finite) ->
//             ready: the alias is flipped to it in admission in one message; the version it
//             replaces drains its running requests (draining) and then stays resident as the
//             rollback target (standby) while the memory budget allows, or is unloaded; unless
//             keep_standby, only until the new version's probation ends.
//   failure:  at any step the alias keeps its current version; the operation ends failed.
//   Admission hears of an alias that nothing serves: load(alias) while its new version loads
//   (requests are told to come back), fail(alias, why) when that version failed (told why).
//   probation: a crash of the new version within `probation` of its flip flips back to the
//             previous version (auto_rollback).
//   rollback: back to the previous version (resident: a flip; unloaded: a load of its remembered
//             path, refused if the file's checksum changed).
//   unload:   the alias leaves admission, its versions drain and are unloaded. An alias that never
//             served (only failed loads) is cleared at once.
// Versions loaded at start-up restart (bounded) after a load failure or crash outside probation.
// Device fallback (model_spec::devices): an executor whose placement is not the CPU and that fails
// to load, fails its warm-up or crashes starts again on the next placement of its list, the CPU
// last, whatever kind of version it is; a fallback is not a restart (it does not use up
// max_restarts) and is reported through on_fallback and the version's device_fallbacks.
// A load reads only a regular GGUF file (type and magic checked before it is hashed) that stays
// unchanged from its open to the engine's load; its loader thread stops early (cancel flag) once
// the version failed, was unloaded or the supervisor stops.
// History kept for the listings, whatever the number of failed loads: the last 16 operations and
// 8 ended (failed or unloaded) versions per alias, and the 16 most recent aliases that never
// served (version_table.hpp: k_ops_kept, k_ended_kept, k_unserved_kept).
#pragma once

#include "actors/batcher/batcher.hpp"
#include "actors/executor/executor.hpp"
#include "actors/supervisor/text_actor.hpp"
#include "messages/interfaces.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

/// Everything needed to start one version of a model.
struct model_spec {
    std::string alias;
    std::string version = "1"; ///< used when the load order names none and there is no file
    std::string path;          ///< the model file: hashed and verified before the executor loads it
    msg::executor_order executor; ///< its engine options' model_path is `path`
    /// Batching settings; n_ctx, KV block figures and EOG ids are filled from the executor.
    msg::batcher_order batcher;
    /// The KV pool the engine will allocate: with the file size, the memory-budget estimate
    /// checked before the engine is loaded (its real figures are checked after).
    std::uint64_t kv_budget_bytes = 0;
    /// The version's text side (tokenizer, chat template): its text actor is spawned beside its
    /// batcher and routed to admission with it.
    text_options text;
    /// The placements it may run on, in preference order (actors/supervisor/device_placements.hpp):
    /// the executor starts on executor.device (normally the first); when that placement fails to
    /// load, fails its warm-up or crashes, the executor starts again on the next one, the CPU
    /// last. Empty: executor.device, then the CPU.
    std::vector<std::string> devices;
};

/// One move of a version to its next placement, for the log, metrics and /health.
struct device_fallback {
    std::string alias;
    std::string version;
    std::string from; ///< the placement that failed ("cuda:0")
    std::string to;   ///< where it starts again ("cpu")
    /// The metric label: not_built | no_driver | no_device | out_of_memory | format_unsupported |
    /// load_failed | warmup_failed | crashed.
    std::string reason_class;
    std::string reason; ///< the failure's own words
};

struct supervisor_options {
    /// Versions built by the caller, loaded at start-up (tests with fake engines).
    std::vector<model_spec> models;
    /// Versions loaded at start-up through make_spec, as POST /v1/models/load does.
    std::vector<msg::load_order> initial;
    /// Receives route(alias, batcher) at every flip, and fail(alias, why) when nothing serves an
    /// alias any more.
    msg::admission_actor admission;
    std::uint32_t max_restarts = 3; ///< per start-up version; past it the version stays failed
    /// Builds the spec of a version for a load order. Runs on a loader thread (it may read files),
    /// so it must be thread-safe. Null: load orders are refused.
    std::function<result<model_spec>(const msg::load_order&)> make_spec;
    /// Weights + KV pools of all resident versions (loading ones by their estimate); 0 = no limit.
    std::uint64_t memory_budget_bytes = 0;
    std::chrono::milliseconds probation{30000};
    /// A replaced version, once drained, stays resident (standby) until the next swap. False:
    /// only until its successor's probation ends (the automatic rollback needs it at once);
    /// then it is unloaded, and a rollback loads its remembered path again.
    bool keep_standby = false;
    /// Longest a replaced version may take to finish its running requests; then it is unloaded
    /// and what still runs there fails.
    std::chrono::milliseconds drain_timeout{120000};
    std::uint32_t warmup_tokens = 4;
    /// Called on the supervisor's thread whenever the version an alias serves changes: its spec,
    /// or nullptr once the alias is unloaded (for the log; requests reach a version's text side
    /// through admission's route, never through this).
    std::function<void(const std::string& alias, const model_spec* serving)> on_serving;
    /// Called when an operation from the API ends: "success", "failed" or "rollback" (successful
    /// rollbacks, manual or automatic); bitnet_model_swaps_total counts them.
    std::function<void(const std::string& result)> on_swap;
    /// Called on the supervisor's thread at every device fallback (bitnet_device_fallbacks_total).
    std::function<void(const device_fallback&)> on_fallback;
    /// Called on the supervisor's thread when a batcher's watchdog saw a step of `alias` run past
    /// step_timeout_ms (bitnet_executor_stalls_total); the version is then replaced as for a crash.
    std::function<void(const std::string& alias)> on_stall;
};

[[nodiscard]] msg::supervisor_actor spawn_supervisor(caf::actor_system& sys,
                                                     supervisor_options opt);

} // namespace bitnet::actors
