#include "actors/cluster/cluster_internal.hpp"
#include "actors/cluster/order_proof.hpp"
#include "actors/cluster/peer_gate.hpp"
#include "actors/cluster/wire_size.hpp"
#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/sec.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

namespace bitnet::actors {

bool parse_peer_address(const std::string& text, peer_address& out) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        return false;
    auto host = text.substr(0, colon);
    if (host.front() == '[') {
        if (host.back() != ']' || host.size() < 3)
            return false;
        host = host.substr(1, host.size() - 2);
    }
    unsigned port = 0;
    for (char c : text.substr(colon + 1)) {
        if (c < '0' || c > '9')
            return false;
        port = port * 10 + static_cast<unsigned>(c - '0');
        if (port > 65535)
            return false;
    }
    out.host = std::move(host);
    out.port = static_cast<std::uint16_t>(port);
    return true;
}

namespace cluster {

const char* to_string(health h) noexcept {
    switch (h) {
    case health::up:
        return "up";
    case health::suspect:
        return "suspect";
    case health::down:
        return "down";
    }
    return "down";
}

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

namespace {

/// Whether the message being handled came from another process (a peer, or anyone who reached
/// the cluster port), not from this node's own actors.
bool from_elsewhere(pointer self) {
    const auto& sender = self->current_sender();
    return !sender || sender->node() != self->node();
}

/// The member that sent the message being handled (its link's node), or null.
member* sending_member(pointer self) {
    const auto& sender = self->current_sender();
    if (!sender)
        return nullptr;
    for (auto& [name, m] : self->state.members)
        if (m.peer && m.state != health::down && m.peer->node() == sender->node())
            return &m;
    return nullptr;
}

/// A peer's part of a roll: run on this node's supervisor when the peer is a member and the
/// order is proven (actors/cluster/order_proof.hpp); otherwise refused and logged.
caf::result<msg::operation_ticket> on_node_order(pointer self, msg::node_order& o) {
    auto& st = self->state;
    const auto* m = sending_member(self);
    std::string why;
    if (!m || m->name != o.issuer)
        why = "the sender is not the member it names ('" + o.issuer + "')";
    else if ((m->roles & role_admin) == 0)
        why = std::string("node '") + o.issuer + "' has no admin role (" +
              (st.opt.checker ? "its certificate gives it " : "it declares ") +
              roles_text(m->roles) + ")";
    else
        why = order_refusal(o, st.opt.node_name, st.opt.admin_keys, st.opt.admin_open, unix_ms());
    if (!why.empty()) {
        spdlog::warn("cluster: refused a {} of '{}' ordered by node '{}': {}", o.kind, o.load.alias,
                     o.issuer, why);
        if (st.opt.on_refused)
            st.opt.on_refused("order");
        return refuse("forbidden", why, o.load.alias);
    }
    spdlog::info("cluster: node '{}' orders {} of '{}' here", o.issuer, o.kind, o.load.alias);
    auto rp = self->make_response_promise<msg::operation_ticket>();
    auto deliver = [rp](const msg::operation_ticket& t) mutable { rp.deliver(t); };
    auto fail = [rp](caf::error& e) mutable { rp.deliver(std::move(e)); };
    const auto timeout = std::chrono::seconds(10);
    if (o.kind == "load")
        self->request(st.opt.supervisor, timeout, msg::load_atom_v, o.load).then(deliver, fail);
    else if (o.kind == "rollback")
        self->request(st.opt.supervisor, timeout, msg::rollback_atom_v, o.load.alias)
            .then(deliver, fail);
    else if (o.kind == "unload")
        self->request(st.opt.supervisor, timeout, msg::unload_atom_v, o.load.alias)
            .then(deliver, fail);
    else
        return refuse("invalid", "unknown operation '" + o.kind + "'", o.load.alias);
    return rp;
}

} // namespace

msg::node_report own_report(pointer self) {
    auto& st = self->state;
    msg::node_report r;
    r.name = st.opt.node_name;
    r.address = st.address;
    r.incarnation = st.incarnation;
    r.replicas = st.own_replicas;
    r.models = st.own_models;
    r.members.push_back({st.opt.node_name, st.address});
    // Only members that are not down: a departed node is not passed on, so once every peer has
    // forgotten it nobody brings it back.
    for (const auto& [name, m] : st.members)
        if (!m.address.empty() && m.state != health::down)
            r.members.push_back({name, m.address});
    return r;
}

namespace {

/// Tells admission which replicas it may route to: those of the nodes that are up.
void push_replicas(pointer self) {
    std::vector<msg::replica_view> views;
    // Only members trusted to serve get work, and only a node with the router role places any.
    for (const auto& [name, m] : self->state.members)
        if (m.state == health::up && (m.roles & role_replica) != 0 &&
            ((self->state.opt.roles & role_router) != 0 ||
             self->state.opt.route_without_router_role))
            views.insert(views.end(), m.last.replicas.begin(), m.last.replicas.end());
    self->send(self->state.opt.admission, msg::cluster_atom_v, std::move(views));
}

void mark_down(pointer self, member& m, const std::string& why) {
    if (m.state == health::down)
        return;
    m.state = health::down;
    m.down_since = clock::now();
    m.last_heartbeat = {};
    if (m.peer)
        peer_gate::process().drop(m.peer->node());
    spdlog::warn("cluster: node '{}' ({}) is down: {}", m.name, m.address, why);
    if (self->state.opt.on_down)
        self->state.opt.on_down(m.name);
    push_replicas(self);
    // Admission drops its replicas and has the relay move the streams that ran there.
    self->send(self->state.opt.admission, msg::down_atom_v, m.name);
}

void count_link(pointer self, const std::string& peer, const char* direction,
                const msg::node_report& r) {
    if (self->state.opt.on_link)
        self->state.opt.on_link(peer, direction, wire_size(self->system(), r));
}

} // namespace

/// A report from `peer`: with `proven` (a join or a join's answer whose proof passed, and the
/// roles it proves) it binds the name to that process; without (a heartbeat) it counts only from
/// the process already bound to the name. It is alive, and it may name members this node has not
/// heard of.
bool on_report(pointer self, const msg::node_report& r, const msg::cluster_actor& peer,
               const peer_roles* proven) {
    auto& st = self->state;
    if (r.name == st.opt.node_name) {
        if (r.incarnation != st.incarnation) {
            spdlog::error("cluster: another node at {} calls itself '{}': ignored (node names "
                          "must be unique)",
                          r.address, r.name);
            if (st.opt.on_refused)
                st.opt.on_refused("name_taken");
        }
        return false;
    }
    // A name belongs to the process linked under it while that link is up: another process
    // claiming it (an impostor, or a second node given the same name) is not let in. A node
    // that restarted comes back once its old link broke (it is down then).
    if (auto it = st.members.find(r.name); it != st.members.end() && peer) {
        const auto& known = it->second;
        if (known.peer && known.state != health::down && known.peer->node() != peer->node()) {
            spdlog::error("cluster: a second process at {} claims to be node '{}', which is "
                          "linked and up at {}: ignored (node names must be unique)",
                          r.address, r.name, known.address);
            if (st.opt.on_refused)
                st.opt.on_refused("name_taken");
            return false;
        }
    }
    if (!proven) {
        const auto it = st.members.find(r.name);
        if (!peer || it == st.members.end() || !it->second.peer ||
            it->second.peer->node() != peer->node())
            return false;
    }
    count_link(self, r.name, "in", r);
    auto& m = st.members[r.name];
    m.name = r.name;
    const bool restarted = m.incarnation != 0 && m.incarnation != r.incarnation;
    if (peer && m.peer != peer) {
        if (m.peer) {
            self->demonitor(m.peer.address());
            if (m.peer->node() != peer->node())
                peer_gate::process().drop(m.peer->node());
        }
        m.peer = peer;
        self->monitor(peer);
    }
    if (proven)
        m.roles = *proven;
    if (restarted && m.state != health::down)
        mark_down(self, m, "it restarted (a new incarnation)");
    m.incarnation = r.incarnation;
    m.address = r.address;
    m.last = r;
    m.last_seen = clock::now();
    // Heartbeat gaps, between heartbeats of a member that stayed up (a join starts the count).
    if (!proven && m.state != health::down) {
        if (m.last_heartbeat != clock::time_point{} && st.opt.on_heartbeat_gap)
            st.opt.on_heartbeat_gap(
                m.name, std::chrono::duration<double>(m.last_seen - m.last_heartbeat).count());
        m.last_heartbeat = m.last_seen;
    }
    if (m.peer)
        peer_gate::process().admit(m.peer->node(), m.name, m.roles);
    if (m.state != health::up) {
        spdlog::info("cluster: node '{}' ({}) is up{} (roles {})", m.name, m.address,
                     m.ever_up ? " again" : "", roles_text(m.roles));
        m.state = health::up;
        m.ever_up = true;
        push_replicas(self);
    }
    for (const auto& ma : r.members)
        if (ma.name != st.opt.node_name && st.members.count(ma.name) == 0) {
            auto& nm = st.members[ma.name];
            nm.name = ma.name;
            nm.address = ma.address;
            nm.down_since = clock::now(); // not reached yet: forgotten if it never is
        }
    return true;
}

namespace {

/// Members down longer than forget_after leave the table: a node name seen once (every pod a
/// Kubernetes deployment ever ran) is not kept, listed and dialed for good.
void forget_departed(pointer self) {
    auto& st = self->state;
    if (st.opt.forget_after.count() <= 0)
        return;
    const auto now = clock::now();
    for (auto it = st.members.begin(); it != st.members.end();) {
        const auto& m = it->second;
        if (m.state != health::down || m.dialing || m.down_since == clock::time_point{} ||
            now - m.down_since < st.opt.forget_after) {
            ++it;
            continue;
        }
        spdlog::info(
            "cluster: node '{}' ({}) forgotten after {} ms down", m.name, m.address,
            std::chrono::duration_cast<std::chrono::milliseconds>(now - m.down_since).count());
        if (m.peer) {
            self->demonitor(m.peer.address());
            peer_gate::process().drop(m.peer->node());
        }
        for (auto s = st.seed_member.begin(); s != st.seed_member.end();)
            s = s->second == it->first ? st.seed_member.erase(s) : std::next(s);
        it = st.members.erase(it);
    }
}

/// Suspect after half the failure timeout without a heartbeat, down after all of it.
void judge(pointer self) {
    auto& st = self->state;
    const auto now = clock::now();
    if (st.last_tick != clock::time_point{} && now - st.last_tick > st.opt.failure_timeout / 2) {
        // This node itself was not running (paused, or starved): the silence was its own.
        spdlog::warn(
            "cluster: this node did not run for {} ms; listening again before judging "
            "its peers",
            std::chrono::duration_cast<std::chrono::milliseconds>(now - st.last_tick).count());
        for (auto& [name, m] : st.members)
            if (m.state != health::down)
                m.last_seen = now;
        return;
    }
    for (auto& [name, m] : st.members) {
        if (m.state == health::down)
            continue;
        const auto silent = now - m.last_seen;
        if (silent > st.opt.failure_timeout) {
            mark_down(
                self, m,
                "no heartbeat for " +
                    std::to_string(
                        std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
                    " ms");
        } else if (silent > st.opt.failure_timeout / 2 && m.state == health::up) {
            m.state = health::suspect;
            spdlog::warn("cluster: node '{}' is suspect (no heartbeat for {} ms)", name,
                         std::chrono::duration_cast<std::chrono::milliseconds>(silent).count());
            if (st.opt.on_suspect)
                st.opt.on_suspect(name);
            push_replicas(self);
        }
    }
}

void report_counts(pointer self) {
    if (!self->state.opt.on_nodes)
        return;
    std::uint32_t up = 1, suspect = 0, down = 0; // this node is up
    for (const auto& [name, m] : self->state.members)
        (m.state == health::up ? up : m.state == health::suspect ? suspect : down) += 1;
    self->state.opt.on_nodes(up, suspect, down);
}

/// Asks admission and the supervisor what this node serves, then sends every linked peer the
/// report. One refresh at a time.
void refresh_and_beat(pointer self) {
    auto& st = self->state;
    if (st.refreshing)
        return;
    st.refreshing = true;
    const auto budget = std::max(st.opt.heartbeat * 2, std::chrono::milliseconds(500));
    // Models first, then replicas: a model the report lists as ready has its replica in it too
    // (admission routes a version only after the supervisor calls it ready), so a peer never
    // shows a model it cannot route to.
    self->request(st.opt.supervisor, budget, msg::models_atom_v)
        .then(
            [self, budget](std::vector<msg::model_status>& models) {
                auto& s = self->state;
                s.own_models.clear();
                for (const auto& ms : models)
                    s.own_models.push_back({ms.alias, ms.version, ms.state});
                self->request(s.opt.admission, budget, msg::replicas_atom_v)
                    .then(
                        [self](std::vector<msg::replica_view>& replicas) {
                            auto& s2 = self->state;
                            s2.own_replicas = std::move(replicas);
                            s2.refreshing = false;
                            if (!s2.opt.clustered || s2.address.empty())
                                return;
                            const auto report = own_report(self);
                            for (auto& [name, m] : s2.members)
                                if (m.peer) {
                                    self->send(m.peer, msg::heartbeat_atom_v, report);
                                    count_link(self, name, "out", report);
                                }
                        },
                        [self](caf::error&) { self->state.refreshing = false; });
            },
            [self](caf::error&) { self->state.refreshing = false; });
}

msg::cluster_view view(pointer self) {
    auto& st = self->state;
    msg::cluster_view v;
    v.self = st.opt.node_name;
    v.clustered = st.opt.clustered;
    auto sum = [](const std::vector<msg::replica_view>& rs, msg::node_status& n) {
        for (const auto& r : rs) {
            n.running += r.running;
            n.waiting += r.waiting;
        }
    };
    msg::node_status me;
    me.name = st.opt.node_name;
    me.address = st.address;
    me.state = "up";
    me.self = true;
    me.models = st.own_models;
    me.roles = roles_text(st.opt.roles);
    sum(st.own_replicas, me);
    v.nodes.push_back(std::move(me));
    const auto now = clock::now();
    for (const auto& [name, m] : st.members) {
        msg::node_status n;
        n.name = name;
        n.address = m.address;
        n.state = to_string(m.state);
        n.last_seen_ms =
            m.ever_up
                ? std::chrono::duration_cast<std::chrono::milliseconds>(now - m.last_seen).count()
                : -1;
        n.models = m.last.models;
        n.roles = m.ever_up ? roles_text(m.roles) : "";
        sum(m.last.replicas, n);
        v.nodes.push_back(std::move(n));
    }
    for (auto it = st.rolls.rbegin(); it != st.rolls.rend() && v.rolls.size() < 16; ++it)
        v.rolls.push_back(it->status);
    return v;
}

msg::cluster_actor::behavior_type cluster_fn(pointer self, cluster_options opt) {
    auto& st = self->state;
    st.opt = std::move(opt);
    std::random_device rd;
    st.incarnation = (std::uint64_t{rd()} << 32) ^ rd() ^
                     static_cast<std::uint64_t>(clock::now().time_since_epoch().count());
    for (const auto& a : st.opt.join)
        st.seed_next_dial[a] = clock::time_point{};
    self->set_down_handler([self](caf::down_msg& dm) {
        for (auto& [name, m] : self->state.members)
            if (m.peer && m.peer.address() == dm.source) {
                peer_gate::process().drop(m.peer->node());
                m.peer = nullptr;
                mark_down(self, m, "the link broke (" + caf::to_string(dm.reason) + ")");
            }
    });
    return {
        [self](msg::join_atom, msg::node_report& r,
               msg::join_proof& p) -> caf::result<msg::node_report, msg::join_proof> {
            const auto sender = self->current_sender();
            if (!sender)
                return msg::to_caf_error(errc::forbidden, "a join needs a sender");
            const auto v = check_proof(self, r.name, p, sender->node());
            if (!v.refusal.empty()) {
                spdlog::error("cluster: refused node '{}' ({}): {}", r.name, r.address, v.refusal);
                if (self->state.opt.on_refused)
                    self->state.opt.on_refused("proof");
                return msg::to_caf_error(errc::forbidden,
                                         "node '" + r.name + "' refused: " + v.refusal);
            }
            if (!on_report(self, r, caf::actor_cast<msg::cluster_actor>(sender), &v.roles))
                return msg::to_caf_error(errc::invalid_argument,
                                         "node '" + r.name + "' is already a member here");
            auto out = own_report(self);
            count_link(self, r.name, "out", out);
            return {std::move(out), own_proof(self, sender->node())};
        },
        [self](msg::heartbeat_atom, msg::node_report& r) {
            auto peer = caf::actor_cast<msg::cluster_actor>(self->current_sender());
            if (on_report(self, r, peer, nullptr) || !peer || r.name == self->state.opt.node_name)
                return;
            // A process heartbeating under a name it has not joined with here (its member was
            // forgotten while the link stayed up, or its join was lost): join it back once, so
            // it proves who it is.
            const auto node = peer->node();
            if (!self->state.rejoining.insert(node).second)
                return;
            join_through(self, peer, node, r.address,
                         [self, node](bool) { self->state.rejoining.erase(node); });
        },
        [self](msg::members_atom) { return view(self); },
        [self](msg::roll_atom, msg::roll_order& order) {
            // Rolls start from this node's HTTP API, never from a peer.
            if (from_elsewhere(self)) {
                spdlog::warn("cluster: refused a roll order from another process");
                if (self->state.opt.on_refused)
                    self->state.opt.on_refused("order");
                return refuse("forbidden", "a roll starts only from this node's own API",
                              order.load.alias);
            }
            return start_roll(self, std::move(order));
        },
        [self](msg::node_op_atom, msg::node_order& o) { return on_node_order(self, o); },
        [self](msg::models_atom) -> caf::result<std::vector<msg::model_status>> {
            if (from_elsewhere(self) && !sending_member(self))
                return caf::make_error(caf::sec::request_receiver_down);
            auto rp = self->make_response_promise<std::vector<msg::model_status>>();
            self->request(self->state.opt.supervisor, std::chrono::seconds(5), msg::models_atom_v)
                .then([rp](std::vector<msg::model_status>& m) mutable { rp.deliver(std::move(m)); },
                      [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
            return rp;
        },
        [self](msg::ready_atom, std::string& address) {
            auto& s = self->state;
            s.address = std::move(address);
            if (s.opt.clustered)
                spdlog::info("cluster: node '{}' listens for peers at {}{}", s.opt.node_name,
                             s.address, s.opt.tls ? " (TLS, mutual certificates)" : " (plain TCP)");
            self->send(self, msg::tick_atom_v);
        },
        [self](msg::tick_atom) {
            auto& s = self->state;
            if (s.opt.clustered) {
                judge(self);
                forget_departed(self);
                dial_missing(self);
                push_replicas(self);
            }
            s.last_tick = clock::now();
            refresh_and_beat(self);
            advance_rolls(self);
            report_counts(self);
            self->delayed_send(self, s.opt.heartbeat, msg::tick_atom_v);
        },
    };
}

} // namespace

} // namespace cluster

msg::cluster_actor spawn_cluster_node(caf::actor_system& sys, cluster_options opt) {
    return sys.spawn(cluster::cluster_fn, std::move(opt));
}

} // namespace bitnet::actors
