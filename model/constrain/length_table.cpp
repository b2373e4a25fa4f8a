#include "model/constrain/length_table.hpp"

#include "model/constrain/limits.hpp"
#include "model/constrain/schema_errors.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace bitnet::model::constrain {

result<length_table> length_table::build(const std::vector<std::vector<std::uint32_t>>& succ,
                                         const std::vector<bool>& fin, std::uint32_t max_steps) {
    const std::size_t n = succ.size();
    const std::size_t nw = std::max<std::size_t>(1, (n + 63) / 64);
    // A_k: the states from which exactly k characters reach a match. A_0 is the final states,
    // A_{k+1}(i) = OR of A_k over i's successors; the sequence is a function of its last term,
    // so the first repeat fixes the preperiod and the period.
    std::vector<std::vector<std::uint64_t>> history;
    std::unordered_map<std::string, std::uint64_t> seen;
    std::vector<std::uint64_t> cur(nw, 0);
    for (std::size_t i = 0; i < n; ++i)
        if (fin[i])
            cur[i >> 6] |= 1ULL << (i & 63);
    length_table t;
    for (std::uint64_t k = 0;; ++k) {
        std::string key(reinterpret_cast<const char*>(cur.data()), nw * sizeof(std::uint64_t));
        if (auto it = seen.find(key); it != seen.end()) {
            t.a_ = it->second;
            t.p_ = k - it->second;
            t.t_ = k;
            break;
        }
        if (k >= max_steps)
            return limit_error("max_length_period", max_steps,
                               "the lengths a pattern can still take repeat only after more "
                               "characters than that");
        seen.emplace(std::move(key), k);
        history.push_back(cur);
        std::vector<std::uint64_t> next(nw, 0);
        for (std::size_t i = 0; i < n; ++i)
            for (auto s : succ[i])
                if ((cur[s >> 6] >> (s & 63)) & 1) {
                    next[i >> 6] |= 1ULL << (i & 63);
                    break;
                }
        cur = std::move(next);
    }
    // Transposed: per state, its bits over k, so a query scans words.
    t.words_ = static_cast<std::size_t>((t.t_ + 63) / 64);
    t.bits_.assign(n * t.words_, 0);
    for (std::uint64_t k = 0; k < t.t_; ++k)
        for (std::size_t i = 0; i < n; ++i)
            if ((history[k][i >> 6] >> (i & 63)) & 1)
                t.bits_[i * t.words_ + (k >> 6)] |= 1ULL << (k & 63);
    t.first_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        t.first_[i] = t.scan(static_cast<std::uint32_t>(i), 0, t.t_);
        if (t.first_[i] != none)
            t.longest_first_ = std::max(t.longest_first_, t.first_[i]);
    }
    return t;
}

std::uint64_t length_table::scan(std::uint32_t state, std::uint64_t from,
                                 std::uint64_t to) const noexcept {
    const std::uint64_t* row = bits_.data() + static_cast<std::size_t>(state) * words_;
    for (std::uint64_t k = from; k < to;) {
        const std::uint64_t w = row[k >> 6] >> (k & 63);
        if (w != 0) {
            const std::uint64_t hit = k + static_cast<std::uint64_t>(__builtin_ctzll(w));
            return hit < to ? hit : none;
        }
        k = (k | 63) + 1;
    }
    return none;
}

std::uint64_t length_table::next(std::uint32_t state, std::uint64_t lo) const noexcept {
    if (first_[state] == none)
        return none;
    if (lo < t_)
        if (auto k = scan(state, lo, t_); k != none)
            return k;
    // Past the bits kept: the period repeats. `from` is the first length >= lo that is at or
    // past t_, `r` where it falls in the period.
    const std::uint64_t from = std::max(lo, t_);
    const std::uint64_t r = a_ + (from - a_) % p_;
    if (auto q = scan(state, r, t_); q != none)
        return from + (q - r);
    if (auto q = scan(state, a_, r); q != none)
        return from + (t_ - r) + (q - a_);
    return none;
}

} // namespace bitnet::model::constrain
