#include "actors/cluster/peer_gate.hpp"

#include <caf/actor_control_block.hpp>

#include <utility>

namespace bitnet::actors {

peer_gate& peer_gate::process() {
    static peer_gate gate;
    return gate;
}

void peer_gate::admit(const caf::node_id& node, const std::string& name, peer_roles roles) {
    std::lock_guard lock(mu_);
    members_[node] = {name, roles};
}

void peer_gate::drop(const caf::node_id& node) {
    std::lock_guard lock(mu_);
    members_.erase(node);
}

bool peer_gate::allows(const caf::strong_actor_ptr& sender, const caf::node_id& self,
                       peer_roles needed, std::string* who) const {
    if (!sender) {
        if (who)
            *who = "an anonymous sender";
        return false;
    }
    if (sender->node() == self)
        return true;
    std::lock_guard lock(mu_);
    const auto it = members_.find(sender->node());
    if (who)
        *who = it != members_.end()
                   ? "node '" + it->second.name + "'"
                   : "process " + caf::to_string(sender->node()) + " (not a member)";
    return it != members_.end() && (it->second.roles & needed) == needed;
}

void peer_gate::refused() const {
    std::function<void()> f;
    {
        std::lock_guard lock(mu_);
        f = on_refused_;
    }
    if (f)
        f();
}

void peer_gate::on_refused(std::function<void()> f) {
    std::lock_guard lock(mu_);
    on_refused_ = std::move(f);
}

} // namespace bitnet::actors
