// Admission's state and the functions its two source files share (internal to actors/):
// admission.cpp is the door of this node's own versions, admission_cluster.cpp routes to other
// nodes' replicas (least outstanding work, remote tokenization, a lost stream's new replica).
#pragma once

#include "actors/admission/admission.hpp"
#include "actors/admission/key_quota.hpp"
#include "actors/supervisor/device_placements.hpp"
#include "actors/trace_spans.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::actors::admission_detail {

using clock = std::chrono::steady_clock;

/// Admission's view of one model's queue.
struct model_queue {
    msg::batcher_actor batcher;
    msg::text_actor text;    ///< the same version's text side
    request_limits limits;   ///< of the version `batcher` serves
    std::uint64_t route = 0; ///< serial of the route now in place (a new one at every flip)
    msg::executor_info info; ///< of the version `batcher` serves
    msg::batcher_stats last; ///< as last polled
    std::uint32_t admitted_since = 0; ///< requests delegated since that poll
    std::uint64_t prompt_tokens_since = 0;
    std::uint64_t work_since = 0; ///< their prompt tokens plus max_tokens
    /// What was ever admitted to this queue (never reset): a stats request notes these when it
    /// goes out, and its answer, which counts every request admitted before it, leaves as
    /// "since" what was admitted after. Several answers in flight at once each subtract their own
    /// mark, so none takes away a request another answer does not count.
    std::uint64_t admitted_total = 0;
    std::uint64_t prompt_tokens_total = 0;
    std::uint64_t work_total = 0;
    std::uint64_t counted_total = 0; ///< admitted_total at the newest answer applied
    double drain_per_s = 0.0;        ///< finished requests per second, smoothed
    clock::time_point polled_at{};
};

/// The version a request was routed to on arrival: it tokenizes the request and runs it, even if
/// the alias flips meanwhile.
struct version_route {
    msg::batcher_actor batcher;
    request_limits limits;
    std::uint64_t route = 0;
};

/// A replica of another node, as its last heartbeat described it, plus what this node sent it
/// since (so a burst of requests spreads before the next heartbeat tells).
struct remote_replica {
    msg::replica_view view;
    std::uint32_t admitted_since = 0;
    std::uint64_t work_since = 0;
};

struct admission_state {
    admission_options opt;
    msg::relay_actor relay;
    /// Other nodes' replicas by alias (only nodes that are up).
    std::map<std::string, std::vector<remote_replica>> remote;
    /// Every alias another node ever served: one with no replica left is a 503 to retry
    /// (replica_lost), not an unknown model.
    std::set<std::string> seen_remote;
    /// Other nodes' batchers known to have stopped (a relayed stream's replica restarted its model
    /// or unloaded it): a heartbeat sent before its node dropped the route may still list one,
    /// and it must not be chosen again. The newest `k_gone_kept` only: a node stops listing a
    /// stopped batcher at its next heartbeat, and an actor's address is never reused.
    std::deque<caf::actor_addr> gone_batchers;
    /// Requests being tokenized by another node's text actor, by a serial of their own: when
    /// that node is lost first, the request starts over here (routed to a replica that is up).
    struct remote_encode {
        std::string node;
        msg::generate_request req;
        msg::sink_actor sink;
        caf::typed_response_promise<msg::request_id> rp;
    };
    std::map<std::uint64_t, remote_encode> encoding;
    std::uint64_t next_encode = 1;
    key_quota quota{{}};
    std::map<std::string, model_queue> models;
    /// Aliases the supervisor holds but nothing serves (the last version's load failed, or it ran
    /// out of restarts), with why: a request for one is told so (503), not "no model". A route
    /// for the alias clears it; bounded as the supervisor's listings are (version_table.hpp,
    /// k_unserved_kept): what the table forgets, the supervisor has admission forget.
    std::map<std::string, std::string> unserved;
    /// Aliases whose new version is loading while nothing serves them (a first load, or a load
    /// after a failure): a request for one is told to come back (503 with a Retry-After), not
    /// "no model" nor the last failure. A route or a failure for the alias ends it; the
    /// supervisor runs one operation per alias, so there are never more than it holds.
    std::set<std::string> loading;
    /// Start-up aliases neither served nor failed yet (admission_options::startup_models).
    std::set<std::string> startup_pending;
    std::uint64_t next_route = 1;
    /// Requests being tokenized, by the route they were routed to.
    std::map<std::uint64_t, std::uint32_t> tokenizing;
    /// Route answers held until no request routed to the route they replaced is still being
    /// tokenized (the route's serial, the supervisor's answer).
    std::vector<std::pair<std::uint64_t, caf::typed_response_promise<bool>>> held_routes;
    bool draining = false;
    bool ticking = false;
    static inline const char* name = "admission";
};

using admission_pointer = msg::admission_actor::stateful_pointer<admission_state>;

/// The key's quota refuses `req` (429 with the seconds until it may send again), or nothing; a
/// request it lets through is counted.
[[nodiscard]] std::optional<caf::error> quota_refusal(admission_state& st,
                                                      const msg::generate_request& req);

/// The work a replica holds: what it last reported plus what was sent to it since.
[[nodiscard]] std::uint64_t load_of(const model_queue& q);
[[nodiscard]] std::uint64_t load_of(const remote_replica& r);
/// How routing ranks a replica: its device's speed class, then its outstanding work
/// (actors/supervisor/device_placements.hpp, ranks_before).
[[nodiscard]] replica_rank rank_of(const model_queue& q);
[[nodiscard]] replica_rank rank_of(const remote_replica& r);
/// The best replica of `alias` on another node (fastest device class, then least loaded), of
/// `version` unless it is empty.
[[nodiscard]] remote_replica* best_remote(admission_state& st, const std::string& alias,
                                          const std::string& version = {});
/// This node's replica of `alias` as the cluster sees it.
[[nodiscard]] msg::replica_view local_view(const admission_state& st, const std::string& alias,
                                           const model_queue& q);
/// The alias a request without one means (see admission_cluster.cpp).
[[nodiscard]] std::string default_alias(const admission_state& st);
/// A request for another node's replica `r`: checked, tokenized there when it is text, and
/// handed to this node's stream relay.
[[nodiscard]] caf::result<msg::request_id> submit_remote(admission_pointer self, remote_replica& r,
                                                         msg::generate_request req,
                                                         msg::sink_actor sink);
/// `node` is lost: the requests its text actor was tokenizing start over, routed again.
void restart_encodes(admission_pointer self, const std::string& node);
/// How many stopped batchers admission_state::gone_batchers remembers.
inline constexpr std::size_t k_gone_kept = 256;
/// Whether `batcher` is one of another node's batchers known to have stopped.
[[nodiscard]] bool is_gone(const admission_state& st, const caf::actor& batcher);
/// A stream's new replica after its replica was lost (its node, or the batcher `gone` that
/// stopped under it): the same version, the least loaded, never `gone`.
[[nodiscard]] caf::result<msg::replica_view> place(admission_pointer self, const std::string& alias,
                                                   const std::string& version,
                                                   const caf::actor& gone);

/// Asks every batcher for its stats (admission_queue.cpp: the figures the caps are checked on).
void poll(admission_pointer self);
/// Why `req` (for `alias`, on version `v`) is refused, or nothing: the caller's errors first (no
/// queue state makes them acceptable later), then draining, the queue caps, the key's quota. When
/// nothing refuses it the request is counted as admitted to the alias's queue.
[[nodiscard]] std::optional<caf::error> refusal(admission_pointer self, const std::string& alias,
                                                const version_route& v,
                                                const msg::generate_request& req);
/// A request routed to `route` was handed over (to its batcher, or answered with an error): once
/// none is left in tokenization there, the route answers held for it go out.
void handed_over(admission_pointer self, std::uint64_t route);
/// `req` (its model the alias) refused through `rp`, or delegated to `v`'s batcher; when the caps
/// refuse it only on account of requests admitted since the last poll, and it was not `asked`
/// yet, the batcher's figures are asked for first. `tokenized`: it came through tokenization
/// (handed_over once decided). Closes `span`.
void admit(admission_pointer self, caf::typed_response_promise<msg::request_id> rp, version_route v,
           msg::generate_request req, msg::sink_actor sink, shared_span_ptr span, bool tokenized,
           bool asked = false);

} // namespace bitnet::actors::admission_detail
