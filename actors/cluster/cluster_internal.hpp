// The cluster actor's state, shared by its three parts: membership (cluster_node.cpp), joining and
// dialing (cluster_dial.cpp) and the rolling model operations (cluster_rolls.cpp). Internal to
// actors/.
#pragma once

#include "actors/cluster/cluster_node.hpp"

#include <caf/node_id.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace bitnet::actors::cluster {

using clock = std::chrono::steady_clock;

enum class health { up, suspect, down };
[[nodiscard]] const char* to_string(health h) noexcept;

/// A peer as this node knows it.
struct member {
    std::string name;
    std::string address;
    std::uint64_t incarnation = 0;
    msg::cluster_actor peer; ///< null while no link is up
    peer_roles roles = 0;    ///< proven by its certificate (TLS) or declared (insecure)
    msg::node_report last;   ///< its latest report
    clock::time_point last_seen{};
    /// When its last heartbeat arrived while it was up (cluster_options::on_heartbeat_gap);
    /// cleared when it goes down, so a gap never spans an outage.
    clock::time_point last_heartbeat{};
    health state = health::down;
    bool ever_up = false;
    bool dialing = false;
    clock::time_point next_dial{};
    std::uint32_t failed_dials = 0; ///< in a row; the backoff doubles with each
    clock::time_point down_since{};
};

/// One rolling operation in progress (or ended: kept for GET /v1/cluster).
struct roll {
    msg::roll_status status;
    msg::roll_order order;
    std::size_t next = 0;             ///< the node being rolled, an index into status.nodes
    std::string op_id;                ///< that node's supervisor operation, once it answered
    bool asked = false;               ///< the node's supervisor has the order
    bool polling = false;             ///< a models query is on its way
    std::string sha;                  ///< the first node's file SHA-256 (load)
    std::vector<std::string> flipped; ///< nodes whose serving version this roll changed
};

struct state {
    cluster_options opt;
    std::string address; ///< advertised to peers; empty until ready
    std::uint64_t incarnation = 0;
    std::map<std::string, member> members;                   ///< by name, this node excluded
    std::map<std::string, clock::time_point> seed_next_dial; ///< --join addresses
    std::map<std::string, bool> seed_dialing;
    std::map<std::string, std::uint32_t> seed_failed_dials;
    std::uint64_t jitter_state = 0x9e3779b97f4a7c15ull; ///< the dial backoff's jitter
    /// The member a --join address turned out to be (this node's own name for itself): a seed
    /// whose member is linked and not down is not dialed again.
    std::map<std::string, std::string> seed_member;
    std::vector<msg::replica_view> own_replicas;
    std::vector<msg::node_model> own_models;
    clock::time_point last_tick{};
    bool refreshing = false;
    std::vector<roll> rolls;
    std::uint64_t next_roll = 1;
    /// Processes that sent a heartbeat under a name they did not join with here: joined back
    /// once (a member forgotten while its link stayed up, or one whose join was lost).
    std::set<caf::node_id> rejoining;
    static inline const char* name = "cluster";
};

using pointer = msg::cluster_actor::stateful_pointer<state>;

/// A refused operation's ticket: `why` is the refusal class, `message` the reason.
[[nodiscard]] msg::operation_ticket refuse(std::string why, std::string message,
                                           const std::string& alias);

using ticket_handler = std::function<void(const msg::operation_ticket&)>;
using models_handler = std::function<void(std::vector<msg::model_status>&)>;
using error_handler = std::function<void(caf::error&)>;

/// Runs `kind` (load | rollback | unload) of `load` on node `name`: this node's own supervisor,
/// or a peer's cluster actor with a node_order proven with `credential` (the admin key of the
/// request that started the roll). False when the node is unknown or down (nothing was sent).
bool order_node(pointer self, const std::string& name, const std::string& kind,
                const msg::load_order& load, const std::string& credential, ticket_handler ok,
                error_handler err);
/// Node `name`'s model list (its supervisor's, through its cluster actor for a peer); false
/// when the node is unknown or down.
bool models_of(pointer self, const std::string& name, models_handler ok, error_handler err);

/// What this node tells its peers in a heartbeat or a join: itself, its replicas and models, and
/// the members that are not down.
[[nodiscard]] msg::node_report own_report(pointer self);
/// A report from `peer`: with `proven` (a join or a join's answer whose proof passed, and the
/// roles it proves) it binds the name to that process; without (a heartbeat) it counts only from
/// the process already bound to the name. False when it was not taken.
bool on_report(pointer self, const msg::node_report& r, const msg::cluster_actor& peer,
               const peer_roles* proven);

// ---- joining and dialing (cluster_dial.cpp) ----------------------------------------------

/// This node's proof of who it is, for the join (or join answer) it sends to `receiver`.
[[nodiscard]] msg::join_proof own_proof(pointer self, const caf::node_id& receiver);
/// Checks the proof of node `name` sent by the process `signer`: its certificate's verdict over
/// TLS, the roles it declares in insecure mode.
[[nodiscard]] peer_checker::verdict check_proof(pointer self, const std::string& name,
                                                const msg::join_proof& p,
                                                const caf::node_id& signer);
/// Joins through `peer` (the process `node`, reached at `address`): sends this node's report and
/// proof, checks the answer's. `on_end(ok)` runs when it is over.
void join_through(pointer self, const msg::cluster_actor& peer, const caf::node_id& node,
                  const std::string& address, std::function<void(bool)> on_end);
/// Dials the --join addresses and the members without a link, each when its backoff allows.
void dial_missing(pointer self);

/// Starts a rolling operation (answers at once).
[[nodiscard]] msg::operation_ticket start_roll(pointer self, msg::roll_order order);
/// Moves the running rolls on (every tick).
void advance_rolls(pointer self);

[[nodiscard]] std::int64_t unix_ms();

} // namespace bitnet::actors::cluster
