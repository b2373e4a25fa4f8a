// The supervisor's books, as a plain class (no actor system needed to use or test it): every
// alias, its versions (one record each, with the state of the lifecycle described in
// supervisor.hpp), the model-management operations and what the listings keep of the past.
// The supervisor actor owns one and is the only caller; the records hold its children's handles
// but the table never messages them.
#pragma once

#include "actors/supervisor/supervisor.hpp"
#include "model/constrain/limits.hpp"
#include "model/gguf/file_digest.hpp"
#include "model/gguf/regular_file.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::actors {

using sup_clock = std::chrono::steady_clock;

enum class vstate { loading, validating, warming, ready, draining, standby, unloaded, failed };

[[nodiscard]] const char* state_name(vstate s) noexcept;
/// Wall-clock milliseconds since the epoch (what the listings show).
[[nodiscard]] std::int64_t unix_ms();
/// Failed or unloaded: holds nothing, kept only for the listing.
[[nodiscard]] inline bool ended(vstate s) noexcept {
    return s == vstate::unloaded || s == vstate::failed;
}

/// What a loader thread hands over: written on that thread before its "prepared" stage message,
/// read by the supervisor only after that message (the mailbox orders the two).
struct prepared {
    model::file_digest digest;
    bool hashed = false;
    model_spec spec;
};

struct version_rec {
    std::uint64_t serial = 0;
    std::string alias;
    std::string id; ///< the version id; empty until the file is hashed (unless given)
    msg::load_order order;
    vstate state = vstate::loading;
    std::string failure;
    std::string sha256;
    std::uint64_t file_bytes = 0;
    std::shared_ptr<prepared> prep;
    /// Set when nothing will use the load any more (failed, unloaded, shutdown): the loader
    /// thread stops at its next check instead of hashing or reading to the end.
    std::shared_ptr<model::cancel_flag> cancel;
    /// Set when its executor is stopped or replaced: a step stuck in a schema loop ends.
    std::shared_ptr<model::constrain::cancel_token> exec_cancel;
    std::uint32_t stalls = 0; ///< steps that ran past step_timeout_ms (the watchdog)
    bool has_spec = false;
    model_spec spec;
    msg::executor_actor executor;
    msg::batcher_actor batcher;
    msg::text_actor text; ///< the version's text side, linked to its batcher
    bool has_info = false;
    msg::executor_info info;
    std::int64_t loaded_at = 0;
    std::uint64_t op = 0;     ///< the running operation that brings this version in, 0 = none
    std::string expect_sha;   ///< rollback by reload: the file must still hash to this
    bool restartable = false; ///< start-up versions restart after failures (bounded)
    bool restarting = false;  ///< a serving version's pair is being restarted
    std::uint32_t restarts = 0;
    std::uint32_t device_fallbacks = 0; ///< moves to the next placement of spec.devices
    bool unload_after_drain = false;
    bool drain_poll = false;
    sup_clock::time_point flipped_at{};
    sup_clock::time_point probation_until{};
    sup_clock::time_point drain_deadline{};

    [[nodiscard]] bool resident() const noexcept { return !ended(state); }
    /// Bytes it holds or is about to hold: its engine's figures once known, the estimate from the
    /// file size and the KV budget while it loads, nothing before the file was read.
    [[nodiscard]] std::uint64_t bytes() const noexcept;
};

struct op_rec {
    msg::operation_status st;
    std::string alias;
    sup_clock::time_point t0;
    bool counted = true; ///< reported through on_swap (operations from the API)
};

struct alias_rec {
    std::uint64_t active = 0;                 ///< the serving version, 0 = none
    std::uint64_t previous = 0;               ///< the resident rollback target, 0 = none
    std::string prev_id, prev_path, prev_sha; ///< the rollback target, remembered when unloaded
    bool prev_warmup = true;
    std::uint64_t running_op = 0;
    std::deque<std::uint64_t> ops;      ///< newest first, the last k_ops_kept
    std::deque<std::uint64_t> versions; ///< newest first, ended ones pruned to k_ended_kept
    bool unloading = false;
    bool served = false; ///< a version of it was ready once
};

/// An API answer that refuses an operation (see msg::operation_ticket::refusal).
[[nodiscard]] msg::operation_ticket refuse(std::string why, std::string message,
                                           const std::string& alias, std::string op_id = {});

class version_table {
public:
    // What the listings (/v1/models, /health) keep of the past, so that failed loads, however
    // many, cost bounded memory and bounded response sizes (documented in supervisor.hpp).
    static constexpr std::size_t k_ops_kept = 16;      ///< operations per alias, newest first
    static constexpr std::size_t k_ended_kept = 8;     ///< failed or unloaded versions per alias
    static constexpr std::size_t k_unserved_kept = 16; ///< aliases that only ever failed

    [[nodiscard]] version_rec* find(std::uint64_t serial);
    [[nodiscard]] const version_rec* find(std::uint64_t serial) const;
    [[nodiscard]] alias_rec* find_alias(const std::string& alias);
    /// The alias's record, created empty when absent.
    [[nodiscard]] alias_rec& alias(const std::string& alias) { return aliases_[alias]; }
    [[nodiscard]] const std::map<std::string, alias_rec>& aliases() const { return aliases_; }
    [[nodiscard]] std::map<std::uint64_t, version_rec>& versions() { return versions_; }
    [[nodiscard]] const std::map<std::uint64_t, version_rec>& versions() const { return versions_; }
    [[nodiscard]] op_rec* find_op(std::uint64_t op);

    /// A new version record of `order.alias` (listed newest first) for operation `op`. Makes
    /// room in the listings first: the oldest ended versions of the alias and the oldest aliases
    /// that only ever failed (other than this one) are forgotten.
    std::uint64_t add_version(const msg::load_order& order, std::uint64_t op);

    /// Starts an operation on `alias`; `exclusive`: it is the alias's running operation (the one
    /// that refuses others). Keeps the alias's last k_ops_kept operations.
    std::uint64_t begin_op(const std::string& alias, std::string kind, std::string version,
                           bool counted = true, bool exclusive = true);
    /// Ends operation `op` in `state` (once). Returns what bitnet_model_swaps_total counts for it
    /// ("success", "failed" or "rollback"), or nothing for unloads, uncounted operations and
    /// operations already ended or forgotten.
    std::optional<std::string> end_op(std::uint64_t op, const std::string& state,
                                      std::string failure = {});
    /// A version's state, mirrored into the operation that brings it in.
    void set_state(version_rec& v, vstate s);

    [[nodiscard]] bool has_resident(const alias_rec& a) const;
    /// Never served and has nothing running or resident: only failed loads.
    [[nodiscard]] bool only_failed(const alias_rec& a) const;
    /// Removes `alias` with its versions and operations.
    void forget_alias(const std::string& alias);
    /// The aliases add_version forgot since the last call (the supervisor tells admission, which
    /// may still hold why they failed).
    [[nodiscard]] std::vector<std::string> take_forgotten() {
        return std::exchange(forgotten_, {});
    }

    [[nodiscard]] msg::model_status alias_view(const std::string& alias, const alias_rec& a) const;
    [[nodiscard]] static msg::version_status version_view(const version_rec& v);
    /// The accepted answer for operation `op`.
    [[nodiscard]] msg::operation_ticket ticket(std::uint64_t op) const;
    /// The refusal when an operation already runs on `alias`, else nothing.
    [[nodiscard]] std::optional<msg::operation_ticket> busy(const std::string& alias) const;

private:
    void prune(alias_rec& a);
    void forget_old_unserved(const std::string& keep);

    std::map<std::string, alias_rec> aliases_;
    std::map<std::uint64_t, version_rec> versions_;
    std::map<std::uint64_t, op_rec> ops_;
    std::vector<std::string> forgotten_;
    std::uint64_t next_serial_ = 1;
    std::uint64_t next_op_ = 1;
};

} // namespace bitnet::actors
