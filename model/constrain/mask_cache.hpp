// The allowed-token masks of matcher states, kept for every schema in one process-wide cache
// with a byte budget. JSON output revisits the same states constantly ("inside a free string",
// "after a comma"), so most decode steps cost a lookup; a schema with many distinct states
// (a long enum, numbers with bounds) must not grow memory without end, nor push every other
// schema's masks out. When over budget the cache evicts from the schema holding the most bytes
// (its least recently used mask first): each schema keeps a fair share while others need room.
#pragma once

#include "model/constrain/token_constraint.hpp"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace bitnet::model::constrain {

class mask_cache {
public:
    struct figures {
        std::uint64_t budget_bytes = 0;
        std::uint64_t bytes = 0;
        std::uint64_t masks = 0;
        std::uint64_t schemas = 0;
        std::uint64_t hits = 0;
        std::uint64_t misses = 0;
        std::uint64_t evictions = 0;
    };

    static constexpr std::uint64_t default_budget_bytes = 256ull << 20;

    explicit mask_cache(std::uint64_t budget_bytes = default_budget_bytes)
        : budget_(budget_bytes) {}

    /// The process's cache (every compiled_constraint uses it).
    [[nodiscard]] static mask_cache& shared();

    /// A new budget; evicts at once down to it.
    void set_budget(std::uint64_t bytes);
    /// The cached mask, or null (counted as a miss when `count_miss`: a lookup that hands the
    /// state to a worker, whose own lookup counts, does not count twice).
    [[nodiscard]] std::shared_ptr<const token_mask>
    find(std::uint64_t schema, const std::string& state, bool count_miss = true);
    void put(std::uint64_t schema, const std::string& state,
             std::shared_ptr<const token_mask> mask);
    /// Drops every mask of `schema` (its compiled constraint is gone).
    void forget(std::uint64_t schema);
    [[nodiscard]] figures snapshot() const;

private:
    struct item {
        std::string state;
        std::shared_ptr<const token_mask> mask;
        std::uint64_t bytes;
    };
    struct per_schema {
        std::list<item> lru; ///< most recently used first
        std::unordered_map<std::string, std::list<item>::iterator> index;
        std::uint64_t bytes = 0;
    };
    mutable std::mutex mu_;
    std::uint64_t budget_;
    std::uint64_t bytes_ = 0;
    std::uint64_t masks_ = 0;
    std::uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
    std::unordered_map<std::uint64_t, per_schema> schemas_;

    void evict_to(std::uint64_t budget);
};

} // namespace bitnet::model::constrain
