#include "model/constrain/mask_cache.hpp"

#include "common/memory_tables.hpp"

namespace bitnet::model::constrain {

namespace {

std::uint64_t cost_of(const std::string& state, const token_mask& mask) {
    // The mask's words, the state key twice (list item and index), and the containers' nodes.
    return mask.capacity() * sizeof(std::uint64_t) + 2 * state.size() + 160;
}

} // namespace

mask_cache& mask_cache::shared() {
    static mask_cache c;
    // Shown in /v1/stats and /metrics beside the process's other tables.
    static const bool registered = [] {
        memory::register_table("mask_cache", [] {
            const auto f = c.snapshot();
            return memory::table_figures{{}, f.bytes, f.budget_bytes, f.masks, f.evictions};
        });
        return true;
    }();
    (void)registered;
    return c;
}

void mask_cache::set_budget(std::uint64_t bytes) {
    std::lock_guard lk(mu_);
    budget_ = bytes;
    evict_to(budget_);
}

std::shared_ptr<const token_mask> mask_cache::find(std::uint64_t schema, const std::string& state,
                                                   bool count_miss) {
    std::lock_guard lk(mu_);
    auto s = schemas_.find(schema);
    if (s != schemas_.end())
        if (auto it = s->second.index.find(state); it != s->second.index.end()) {
            s->second.lru.splice(s->second.lru.begin(), s->second.lru, it->second);
            ++hits_;
            return it->second->mask;
        }
    if (count_miss)
        ++misses_;
    return nullptr;
}

void mask_cache::put(std::uint64_t schema, const std::string& state,
                     std::shared_ptr<const token_mask> mask) {
    const auto cost = cost_of(state, *mask);
    std::lock_guard lk(mu_);
    if (cost > budget_)
        return;
    auto& s = schemas_[schema];
    if (s.index.count(state))
        return; // another thread computed it too
    s.lru.push_front(item{state, std::move(mask), cost});
    s.index.emplace(state, s.lru.begin());
    s.bytes += cost;
    bytes_ += cost;
    ++masks_;
    evict_to(budget_);
}

void mask_cache::evict_to(std::uint64_t budget) {
    while (bytes_ > budget) {
        // The schema holding the most bytes gives up its least recently used mask.
        auto biggest = schemas_.end();
        for (auto it = schemas_.begin(); it != schemas_.end(); ++it)
            if (biggest == schemas_.end() || it->second.bytes > biggest->second.bytes)
                biggest = it;
        if (biggest == schemas_.end())
            return;
        auto& s = biggest->second;
        if (s.lru.empty()) {
            schemas_.erase(biggest);
            continue;
        }
        const auto& victim = s.lru.back();
        s.bytes -= victim.bytes;
        bytes_ -= victim.bytes;
        --masks_;
        ++evictions_;
        s.index.erase(victim.state);
        s.lru.pop_back();
        if (s.lru.empty())
            schemas_.erase(biggest);
    }
}

void mask_cache::forget(std::uint64_t schema) {
    std::lock_guard lk(mu_);
    auto it = schemas_.find(schema);
    if (it == schemas_.end())
        return;
    bytes_ -= it->second.bytes;
    masks_ -= it->second.lru.size();
    schemas_.erase(it);
}

mask_cache::figures mask_cache::snapshot() const {
    std::lock_guard lk(mu_);
    return {budget_, bytes_, masks_, schemas_.size(), hits_, misses_, evictions_};
}

} // namespace bitnet::model::constrain
