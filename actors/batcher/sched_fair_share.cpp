// Fair shares between tenants for the batching policy (policy_config::tenant_share_percent).
// Without them one API key could hold every sequence slot (four requests with n = 8 fill 32
// slots for thousands of tokens) or every prompt token of a step (long echo prefills), and
// another key's short request would wait for all of it. The rule: while another tenant waits,
// a tenant holds at most its share of the slots and of a step's prompt budget; within a tenant,
// first come, first served; with nobody else waiting a tenant may use everything.
#include "actors/batcher/sched_policy.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

namespace bitnet::sched {

std::uint32_t policy::seq_weight(const sequence& s) noexcept {
    return s.forked ? 1u : std::max(s.req.n_choices, 1u);
}

std::uint32_t policy::tenant_seq_cap() const noexcept {
    return std::max(1u, static_cast<std::uint32_t>(std::uint64_t{cfg_.max_batch_seqs} *
                                                   cfg_.tenant_share_percent / 100));
}

bool policy::others_wait(const std::string& tenant) const {
    if (cfg_.tenant_share_percent >= 100)
        return false;
    for (const auto& [t, n] : waiting_by_tenant_)
        if (n > 0 && t != tenant)
            return true;
    return false;
}

policy::prompt_shares policy::plan_prompt_shares(std::uint32_t budget) const {
    prompt_shares ps;
    ps.start = budget;
    ps.share = std::max(
        2u, static_cast<std::uint32_t>(std::uint64_t{budget} * cfg_.tenant_share_percent / 100));
    if (cfg_.tenant_share_percent >= 100 || single_tenant_)
        return ps;
    for (auto id : running_) {
        const auto& s = seqs_.at(id);
        if (const auto left = s.tokens.size() - s.n_cached; left > 1)
            ps.demand[s.req.tenant] += static_cast<std::uint32_t>(left);
    }
    const auto cap = tenant_seq_cap();
    for (const auto& q : waiting_)
        for (auto id : q) {
            const auto& s = seqs_.at(id);
            auto h = held_.find(s.req.tenant);
            if (h == held_.end() || h->second < cap || !others_wait(s.req.tenant))
                ps.demand[s.req.tenant] += static_cast<std::uint32_t>(s.tokens.size());
        }
    return ps;
}

std::uint32_t policy::prompt_allowance(const prompt_shares& ps, const std::string& tenant,
                                       std::uint32_t budget) const {
    std::uint64_t others = 0;
    for (const auto& [t, d] : ps.demand)
        if (t != tenant)
            others += std::min(d, ps.share);
    if (others == 0)
        return budget;
    const auto limit = std::max<std::uint64_t>(ps.share, ps.start > others ? ps.start - others : 0);
    auto u = ps.used.find(tenant);
    const std::uint64_t used = u == ps.used.end() ? 0 : u->second;
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(budget, limit > used ? limit - used : 0));
}

std::size_t policy::pick_waiting(std::size_t p, const prompt_shares& ps,
                                 std::uint32_t budget) const {
    const auto& q = waiting_[p];
    if (cfg_.tenant_share_percent >= 100 || single_tenant_ || q.empty())
        return 0;
    const auto cap = tenant_seq_cap();
    const auto eligible = [&](const sequence& s) {
        auto it = held_.find(s.req.tenant);
        const auto held = it == held_.end() ? 0u : it->second;
        return (held < cap || !others_wait(s.req.tenant)) &&
               prompt_allowance(ps, s.req.tenant, budget) > 0;
    };
    // A tenant's own requests keep their order: only the first of each tenant is a candidate.
    std::unordered_set<std::string> seen;
    for (std::size_t i = 0; i < q.size(); ++i) {
        const auto& s = seqs_.at(q[i]);
        if (!seen.insert(s.req.tenant).second)
            continue;
        if (eligible(s))
            return i;
    }
    return 0;
}

void policy::share_fairly(step_plan& plan, std::uint32_t& budget, std::uint32_t& seqs_left) {
    held_.clear();
    waiting_by_tenant_.clear();
    single_tenant_ = true;
    if (cfg_.tenant_share_percent >= 100)
        return;
    for (auto id : running_) {
        const auto& s = seqs_.at(id);
        held_[s.req.tenant] += seq_weight(s);
    }
    // The first waiting request of each tenant (by priority, then age): what it needs.
    struct want {
        std::string tenant;
        std::uint32_t slots = 0;
        priority prio = priority::normal;
    };
    std::vector<want> wants;
    for (std::size_t p = 0; p < n_priorities; ++p)
        for (auto id : waiting_[p]) {
            const auto& s = seqs_.at(id);
            if (waiting_by_tenant_[s.req.tenant]++ == 0)
                wants.push_back({s.req.tenant, seq_weight(s), s.req.prio});
        }
    // One tenant alone (a server without API keys, or one key busy): no share to keep, and the
    // plan's prompt shares and admissions skip their per-request passes.
    single_tenant_ = waiting_by_tenant_.size() <= 1 && held_.size() <= 1 &&
                     (held_.empty() || waiting_by_tenant_.empty() ||
                      held_.begin()->first == waiting_by_tenant_.begin()->first);
    if (single_tenant_)
        return;
    const auto cap = tenant_seq_cap();
    std::uint32_t in_use = 0;
    for (const auto& [t, n] : held_)
        in_use += n;
    for (const auto& w : wants) {
        auto& mine = held_[w.tenant];
        if (mine >= cap)
            continue;
        const auto need = std::min(w.slots, cap - mine);
        // Slots are taken from the newest sequences of the tenants furthest over their share,
        // never from a higher priority than the waiting request's.
        while (in_use + need > cfg_.max_batch_seqs) {
            const request_id* victim = nullptr;
            std::uint32_t most = cap;
            for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
                const auto& s = seqs_.at(*it);
                const auto h = held_[s.req.tenant];
                if (s.req.tenant != w.tenant && h > most && s.req.prio >= w.prio) {
                    victim = &*it;
                    most = h;
                }
            }
            if (victim == nullptr)
                break;
            const auto id = *victim; // preempt() erases it from running_
            auto& v = seqs_.at(id);
            const auto weight = seq_weight(v);
            held_[v.req.tenant] -= weight;
            in_use -= weight;
            ++waiting_by_tenant_[v.req.tenant];
            preempt(id, plan, budget, seqs_left);
        }
        in_use += need; // promised to this tenant: the next waiting tenant needs room of its own
    }
}

} // namespace bitnet::sched
