// Rolling model operations across the nodes of a cluster (POST /v1/models/load, rollback and
// unload on any node): node after node, each through its own supervisor with the existing
// validation, warm-up, drain and probation. A node moves on only when its operation has ended well
// (and, for a load, when its file has the SHA-256 the first node's had: every node loads its own
// path, and different bytes under one version would make migrated streams diverge). A failure stops
// the roll and rolls back the nodes it already changed, so every node serves what it served before.
#include "actors/cluster/cluster_internal.hpp"
#include "actors/cluster/order_proof.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::actors::cluster {

namespace {

bool serves(const std::vector<msg::node_model>& models, const std::string& alias) {
    return std::any_of(models.begin(), models.end(),
                       [&](const msg::node_model& m) { return m.alias == alias; });
}

/// Puts back the versions this roll changed (newest change first).
void undo(pointer self, roll& r) {
    const auto alias = r.status.alias;
    msg::load_order target;
    target.alias = alias;
    const auto credential = r.order.credential;
    for (auto it = r.flipped.rbegin(); it != r.flipped.rend(); ++it) {
        const auto node = *it;
        const auto roll_id = r.status.id;
        const bool sent = order_node(
            self, node, "rollback", target, credential,
            [self, node, roll_id, target, credential](const msg::operation_ticket& t) {
                if (t.refusal.empty()) {
                    spdlog::info("roll {}: node '{}' rolls '{}' back ({})", roll_id, node,
                                 target.alias, t.operation_id);
                    return;
                }
                // A new alias has nothing to go back to: it goes away.
                (void)order_node(
                    self, node, "unload", target, credential, [](const msg::operation_ticket&) {},
                    [](caf::error&) {});
            },
            [node, roll_id](caf::error& e) {
                spdlog::error("roll {}: undo on node '{}' failed: {}", roll_id, node,
                              caf::to_string(e));
            });
        if (!sent)
            spdlog::error("roll {}: cannot undo on node '{}': it is down", r.status.id, node);
    }
}

void fail_roll(pointer self, roll& r, std::string why) {
    r.status.state = "failed";
    r.status.failure = std::move(why);
    r.status.finished_ms = unix_ms();
    spdlog::error("roll {} ({} '{}'): {}; rolling back {} node(s)", r.status.id, r.status.kind,
                  r.status.alias, r.status.failure, r.flipped.size());
    undo(self, r);
}

/// Sends the current node its order.
void ask_node(pointer self, std::size_t index) {
    auto& r = self->state.rolls[index];
    const auto node = r.status.nodes[r.next];
    r.asked = true;
    auto on_ticket = [self, index, node](const msg::operation_ticket& t) {
        auto& rr = self->state.rolls[index];
        if (!t.refusal.empty())
            return fail_roll(self, rr, "node '" + node + "' refused: " + t.message);
        rr.op_id = t.operation_id;
        spdlog::info("roll {}: node '{}' runs {}", rr.status.id, node, t.operation_id);
    };
    auto on_error = [self, index, node](caf::error& e) {
        fail_roll(self, self->state.rolls[index],
                  "node '" + node + "' did not answer: " + caf::to_string(e));
    };
    if (!order_node(self, node, r.status.kind, r.order.load, r.order.credential, on_ticket,
                    on_error)) {
        r.asked = false;
        fail_roll(self, r, "node '" + node + "' is down");
    }
}

/// The current node's operation has ended: on to the next node, or the end, or a failure.
void node_done(pointer self, std::size_t index, const msg::model_status* ms,
               const msg::operation_status& op) {
    auto& r = self->state.rolls[index];
    const auto node = r.status.nodes[r.next];
    if (op.state == "failed")
        return fail_roll(self, r, "node '" + node + "': " + op.failure);
    if (r.status.kind != "unload")
        r.flipped.push_back(node);
    if (r.status.kind == "load" && ms) {
        if (r.sha.empty()) {
            r.sha = ms->file_sha256;
            r.status.version = ms->version;
        } else if (ms->file_sha256 != r.sha) {
            return fail_roll(self, r,
                             "node '" + node + "' loaded a file whose SHA-256 " +
                                 ms->file_sha256.substr(0, 12) +
                                 "... differs from the first "
                                 "node's " +
                                 r.sha.substr(0, 12) + "...: every node must load the same bytes");
        }
    }
    r.status.done.push_back(node);
    r.asked = false;
    r.op_id.clear();
    if (++r.next == r.status.nodes.size()) {
        r.status.state = "done";
        r.status.finished_ms = unix_ms();
        spdlog::info("roll {} ({} '{}'): done on {} node(s)", r.status.id, r.status.kind,
                     r.status.alias, r.status.nodes.size());
        return;
    }
    ask_node(self, index);
}

/// Looks at the current node's operation (one query at a time).
void poll_node(pointer self, std::size_t index) {
    auto& r = self->state.rolls[index];
    if (r.polling || r.op_id.empty())
        return;
    const auto node = r.status.nodes[r.next];
    r.polling = true;
    const bool sent = models_of(
        self, node,
        [self, index](std::vector<msg::model_status>& models) {
            auto& rr = self->state.rolls[index];
            rr.polling = false;
            if (rr.status.state != "running")
                return;
            for (const auto& ms : models)
                for (const auto& op : ms.operations)
                    if (op.id == rr.op_id && op.finished_ms != 0)
                        return node_done(self, index, ms.alias == rr.status.alias ? &ms : nullptr,
                                         op);
            // An unload that ended takes the alias out of the list with its operations.
            if (rr.status.kind == "unload" &&
                std::none_of(models.begin(), models.end(), [&](const msg::model_status& m) {
                    return m.alias == rr.status.alias;
                })) {
                msg::operation_status gone;
                gone.state = "unloaded";
                node_done(self, index, nullptr, gone);
            }
        },
        [self, index](caf::error&) { self->state.rolls[index].polling = false; });
    if (!sent) {
        r.polling = false;
        fail_roll(self, r, "node '" + node + "' went down during the roll");
    }
}

} // namespace

msg::operation_ticket refuse(std::string why, std::string message, const std::string& alias) {
    msg::operation_ticket t;
    t.refusal = std::move(why);
    t.message = std::move(message);
    t.alias = alias;
    return t;
}

bool order_node(pointer self, const std::string& name, const std::string& kind,
                const msg::load_order& load, const std::string& credential, ticket_handler ok,
                error_handler err) {
    auto& st = self->state;
    const auto timeout = std::chrono::seconds(10);
    if (name == st.opt.node_name) {
        const auto& sup = st.opt.supervisor;
        if (kind == "load")
            self->request(sup, timeout, msg::load_atom_v, load).then(ok, err);
        else if (kind == "rollback")
            self->request(sup, timeout, msg::rollback_atom_v, load.alias).then(ok, err);
        else
            self->request(sup, timeout, msg::unload_atom_v, load.alias).then(ok, err);
        return true;
    }
    auto it = st.members.find(name);
    if (it == st.members.end() || it->second.state == health::down || !it->second.peer)
        return false;
    msg::node_order o;
    o.kind = kind;
    o.load = load;
    o.issuer = st.opt.node_name;
    o.target = name;
    o.issued_ms = unix_ms();
    if (!credential.empty())
        o.proof = order_proof(credential, o);
    self->request(it->second.peer, timeout, msg::node_op_atom_v, std::move(o)).then(ok, err);
    return true;
}

bool models_of(pointer self, const std::string& name, models_handler ok, error_handler err) {
    auto& st = self->state;
    const auto timeout = std::chrono::seconds(5);
    if (name == st.opt.node_name) {
        self->request(st.opt.supervisor, timeout, msg::models_atom_v).then(ok, err);
        return true;
    }
    auto it = st.members.find(name);
    if (it == st.members.end() || it->second.state == health::down || !it->second.peer)
        return false;
    self->request(it->second.peer, timeout, msg::models_atom_v).then(ok, err);
    return true;
}

msg::operation_ticket start_roll(pointer self, msg::roll_order order) {
    auto& st = self->state;
    const auto alias = order.load.alias;
    const auto kind = order.kind; // a copy: order is moved into the roll below
    if (kind != "load" && kind != "rollback" && kind != "unload")
        return refuse("invalid", "unknown operation '" + kind + "'", alias);
    for (const auto& r : st.rolls)
        if (r.status.alias == alias && r.status.state == "running") {
            auto t =
                refuse("conflict", "roll " + r.status.id + " on '" + alias + "' is running", alias);
            t.operation_id = r.status.id;
            return t;
        }
    std::vector<std::string> nodes = order.nodes;
    if (nodes.empty()) {
        if (serves(st.own_models, alias))
            nodes.push_back(st.opt.node_name);
        for (const auto& [name, m] : st.members)
            if (m.state != health::down && serves(m.last.models, alias))
                nodes.push_back(name);
        // An alias nobody serves yet: this node starts it ("nodes" names others).
        if (nodes.empty() && kind == "load")
            nodes.push_back(st.opt.node_name);
        if (nodes.empty())
            return refuse("not_found", "no node serves '" + alias + "'", alias);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (const auto& n : nodes) {
        if (n == st.opt.node_name)
            continue;
        auto it = st.members.find(n);
        if (it == st.members.end())
            return refuse("invalid", "no node '" + n + "' in the cluster", alias);
        if (it->second.state == health::down)
            return refuse("invalid", "node '" + n + "' is down", alias);
    }
    // A node that is not up (suspect) is refused rather than started on: a roll must not stall.
    for (const auto& [name, m] : st.members)
        if (std::find(nodes.begin(), nodes.end(), name) != nodes.end() && m.state != health::up)
            return refuse("invalid", "node '" + name + "' is " + to_string(m.state), alias);
    roll r;
    r.order = std::move(order);
    r.status.id = "roll-" + std::to_string(st.next_roll++);
    r.status.kind = kind;
    r.status.alias = alias;
    r.status.version = r.order.load.version;
    r.status.state = "running";
    r.status.nodes = nodes;
    r.status.started_ms = unix_ms();
    spdlog::info("roll {}: {} '{}' across {} node(s)", r.status.id, kind, alias, nodes.size());
    st.rolls.push_back(std::move(r));
    // Rolls stay listed (callbacks hold their index); GET /v1/cluster shows the newest few.
    const auto index = st.rolls.size() - 1;
    ask_node(self, index);
    msg::operation_ticket t;
    t.operation_id = st.rolls[index].status.id;
    t.alias = alias;
    t.version = st.rolls[index].status.version;
    t.state = st.rolls[index].status.state;
    return t;
}

void advance_rolls(pointer self) {
    auto& rolls = self->state.rolls;
    for (std::size_t i = 0; i < rolls.size(); ++i)
        if (rolls[i].status.state == "running" && rolls[i].asked)
            poll_node(self, i);
}

} // namespace bitnet::actors::cluster
