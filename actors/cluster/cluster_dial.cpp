// The cluster actor's dialing half (actors/cluster/cluster_node.hpp): this node's join proof and
// the check of a peer's, joining through a peer, and dialing the --join addresses and the members
// without a link with exponential backoff and jitter.
#include "actors/cluster/cluster_internal.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/sec.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::actors::cluster {

/// This node's proof of who it is, for the join (or join answer) it sends to `receiver`.
msg::join_proof own_proof(pointer self, const caf::node_id& receiver) {
    const auto& st = self->state;
    msg::join_proof p;
    p.roles = st.opt.roles;
    if (!st.opt.credential)
        return p;
    p.chain_pem = st.opt.credential->chain_pem();
    p.issued_ms = unix_ms();
    p.signature = st.opt.credential->sign(
        {st.opt.node_name, caf::to_string(self->node()), caf::to_string(receiver), p.issued_ms});
    return p;
}

/// Checks the proof of node `name`, sent by the process `signer`: its certificate's verdict over
/// TLS, the roles it declares in insecure mode.
peer_checker::verdict check_proof(pointer self, const std::string& name, const msg::join_proof& p,
                                  const caf::node_id& signer) {
    const auto& st = self->state;
    if (!st.opt.checker)
        return {{}, static_cast<peer_roles>(p.roles & all_roles)};
    return st.opt.checker->check(
        p.chain_pem, p.signature,
        {name, caf::to_string(signer), caf::to_string(self->node()), p.issued_ms}, unix_ms(),
        st.opt.shared_certificate);
}

/// Joins through `peer` (the process `node`, reached at `address`): sends this node's report and
/// proof, checks the proof of the answer. `on_end(ok)` runs when it is over.
void join_through(pointer self, const msg::cluster_actor& peer, const caf::node_id& node,
                  const std::string& address, std::function<void(bool)> on_end) {
    auto report = own_report(self);
    self->request(peer, std::chrono::seconds(5), msg::join_atom_v, report, own_proof(self, node))
        .then(
            [self, peer, node, address, on_end](msg::node_report& r, msg::join_proof& p) {
                const auto v = check_proof(self, r.name, p, node);
                if (!v.refusal.empty()) {
                    spdlog::error("cluster: refused node '{}' at {}: {}", r.name, address,
                                  v.refusal);
                    if (self->state.opt.on_refused)
                        self->state.opt.on_refused("proof");
                    return on_end(false);
                }
                self->state.seed_member[address] = r.name;
                (void)on_report(self, r, peer, &v.roles);
                on_end(true);
            },
            [address, on_end](caf::error& e) {
                spdlog::warn("cluster: join through {} failed: {}", address, caf::to_string(e));
                on_end(false);
            });
}

namespace {

/// The middleman actor that dials: CAF's OpenSSL one with TLS, the plain one otherwise.
caf::io::middleman_actor dialer(pointer self) {
    auto& sys = self->system();
    return self->state.opt.tls ? sys.openssl_manager().actor_handle()
                               : sys.middleman().actor_handle();
}

/// Dials `address`, then joins through the actor published there. `on_end(ok)` runs when the
/// attempt is over.
void dial(pointer self, const std::string& address, std::function<void(bool)> on_end) {
    peer_address pa;
    if (!parse_peer_address(address, pa)) {
        spdlog::error("cluster: '{}' is not a HOST:PORT address", address);
        return on_end(false);
    }
    self->request(dialer(self), std::chrono::seconds(5), caf::connect_atom::value, pa.host, pa.port)
        .then(
            [self, address, on_end](caf::node_id& node, caf::strong_actor_ptr& p,
                                    std::set<std::string>&) {
                auto peer = caf::actor_cast<msg::cluster_actor>(p);
                if (!peer) {
                    spdlog::warn("cluster: nothing is published at {}", address);
                    return on_end(false);
                }
                join_through(self, peer, node, address, on_end);
            },
            [self, address, on_end](caf::error& e) {
                const bool handshake = e == caf::sec::disconnect_during_handshake;
                spdlog::log(handshake ? spdlog::level::err : spdlog::level::debug,
                            "cluster: cannot reach {}: {}{}", address, caf::to_string(e),
                            handshake ? " (the TLS handshake failed: the peer's certificate is "
                                        "not signed by this cluster's CA, or this node's is "
                                        "not by its)"
                                      : "");
                if (self->state.opt.on_dial_failed)
                    self->state.opt.on_dial_failed();
                on_end(false);
            });
}

/// The wait before the next dial after `failures` failed ones in a row: 1 s doubling to the cap,
/// ±20 % jitter.
clock::duration dial_backoff(state& st, std::uint32_t failures) {
    using ms = std::chrono::milliseconds;
    const auto cap = std::max<std::int64_t>(st.opt.max_dial_backoff.count(), 1000);
    std::int64_t wait = 1000;
    for (std::uint32_t i = 0; i < failures && wait < cap; ++i)
        wait *= 2;
    wait = std::min(wait, cap);
    st.jitter_state = st.jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<double>(st.jitter_state >> 11) / static_cast<double>(1ull << 53);
    return ms(static_cast<std::int64_t>(static_cast<double>(wait) * (0.8 + 0.4 * r)));
}

} // namespace

/// Dials the --join addresses and the members without a link, each when its backoff allows.
void dial_missing(pointer self) {
    auto& st = self->state;
    const auto now = clock::now();
    for (auto& [addr, next] : st.seed_next_dial) {
        if (addr == st.address || st.seed_dialing[addr] || now < next)
            continue;
        // A seed that turned out to be this node, or a member linked and not down.
        const auto named = st.seed_member.find(addr);
        if (named != st.seed_member.end() && named->second == st.opt.node_name)
            continue;
        const bool linked = std::any_of(st.members.begin(), st.members.end(), [&](const auto& kv) {
            const bool is_seed = kv.second.address == addr ||
                                 (named != st.seed_member.end() && named->second == kv.first);
            return is_seed && kv.second.peer && kv.second.state != health::down;
        });
        if (linked)
            continue;
        st.seed_dialing[addr] = true;
        next = now + dial_backoff(st, st.seed_failed_dials[addr]);
        dial(self, addr, [self, a = addr](bool ok) {
            self->state.seed_dialing[a] = false;
            auto& failed = self->state.seed_failed_dials[a];
            failed = ok ? 0 : failed + 1;
        });
    }
    for (auto& [name, m] : st.members) {
        if (m.peer || m.dialing || m.address.empty() || now < m.next_dial)
            continue;
        m.dialing = true;
        m.next_dial = now + dial_backoff(st, m.failed_dials);
        dial(self, m.address, [self, n = name](bool ok) {
            if (auto it = self->state.members.find(n); it != self->state.members.end()) {
                it->second.dialing = false;
                it->second.failed_dials = ok ? 0 : it->second.failed_dials + 1;
            }
        });
    }
}

} // namespace bitnet::actors::cluster
