// Which other processes may use this node's replicas. Batchers and text actors are reachable by
// any process linked to this one that learns (or guesses) their actor ids, so each checks the
// sender of a request before taking it: this node's own actors always pass, a peer only while the
// cluster actor has it as a member that is not down, with the role the message needs
// (common/peer_roles.hpp; placing a request or tokenizing for one: router). Written by the
// cluster actor at every join, heartbeat and loss; read by every batcher and text actor.
#pragma once

#include "common/peer_roles.hpp"

#include <caf/actor_control_block.hpp>
#include <caf/node_id.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace bitnet::actors {

class peer_gate {
public:
    /// The one gate of this process.
    [[nodiscard]] static peer_gate& process();

    /// `node` is a member with `roles` (replacing what it had).
    void admit(const caf::node_id& node, const std::string& name, peer_roles roles);
    /// `node` is no longer trusted (down, forgotten, replaced by a restart).
    void drop(const caf::node_id& node);

    /// Whether a message from `sender` may use `needed` here, where `self` is the receiving
    /// actor's node. False for no sender: a message from another process without one cannot be
    /// told apart from a local anonymous one. `who` gets the sending member's name, or its node
    /// id when it is none.
    [[nodiscard]] bool allows(const caf::strong_actor_ptr& sender, const caf::node_id& self,
                              peer_roles needed, std::string* who = nullptr) const;

    /// A request (or a prompt to tokenize) refused after `allows` said no: runs the hook.
    void refused() const;
    /// The hook refused() runs (the start-up's counter); set before any peer links.
    void on_refused(std::function<void()> f);

private:
    struct entry {
        std::string name;
        peer_roles roles = 0;
    };
    mutable std::mutex mu_;
    std::map<caf::node_id, entry> members_;
    std::function<void()> on_refused_;
};

} // namespace bitnet::actors
