#include "model/constrain/pattern_regex.hpp"

#include <algorithm>
#include <string>

namespace bitnet::model::constrain {

namespace {

constexpr std::uint64_t sticky_match = 1ULL << 63; ///< a match was seen and the end is free
constexpr std::uint32_t max_states = limits::max_pattern_states;
constexpr std::size_t max_format_states = 4096;

/// The length table of a graph given as per-state successor lists.
result<std::shared_ptr<const length_table>>
table_of(const std::vector<std::vector<std::uint32_t>>& succ, const std::vector<bool>& fin) {
    auto t = length_table::build(succ, fin, limits::max_length_period);
    if (!t)
        return t.error();
    return std::make_shared<const length_table>(std::move(*t));
}

} // namespace

result<pattern_regex> pattern_regex::compile(std::string_view pattern) {
    if (pattern.size() > limits::max_pattern_bytes)
        return error{errc::invalid_argument,
                     "pattern of " + std::to_string(pattern.size()) +
                         " bytes is over the limit max_pattern_bytes (" +
                         std::to_string(limits::max_pattern_bytes) + ")",
                     "max_pattern_bytes"};
    auto nfa = parse_pattern(pattern);
    if (!nfa)
        return nfa.error();
    if (nfa->moves.size() > max_states)
        return pattern_unsupported(pattern, "a pattern needing more than " +
                                                std::to_string(max_states) +
                                                " NFA states (limit max_pattern_states)");
    pattern_regex out;
    out.anchored_start_ = nfa->anchored_start;
    out.anchored_end_ = nfa->anchored_end;
    std::vector<std::vector<std::uint32_t>> succ(nfa->moves.size());
    for (std::size_t k = 0; k < nfa->moves.size(); ++k) {
        if (nfa->match[k])
            out.match_mask_ |= 1ULL << k;
        for (const auto& [cls, t] : nfa->moves[k])
            succ[k].push_back(t);
    }
    auto lengths = table_of(succ, nfa->match);
    if (!lengths)
        return lengths.error();
    out.lengths_ = std::move(*lengths);
    for (std::size_t k = 0; k < nfa->moves.size(); ++k)
        if (out.lengths_->first(static_cast<std::uint32_t>(k)) != length_table::none)
            out.live_mask_ |= 1ULL << k;
    out.classes_ = std::move(nfa->classes);
    out.moves_ = std::move(nfa->moves);
    out.start_ = 1ULL;
    if (!out.anchored_end_ && (out.start_ & out.match_mask_))
        out.start_ |= sticky_match;
    return out;
}

result<pattern_regex> pattern_regex::determinized(std::string_view pattern,
                                                  std::initializer_list<std::string_view> also) {
    auto dfa_of = [](std::string_view p) -> result<pattern_dfa> {
        auto nfa = parse_pattern(p);
        if (!nfa)
            return nfa.error();
        return determinize(*nfa, max_format_states);
    };
    auto d = dfa_of(pattern);
    if (!d)
        return d.error();
    for (auto p : also) {
        auto e = dfa_of(p);
        if (!e)
            return e.error();
        auto both = intersect(*d, *e, max_format_states);
        if (!both)
            return both.error();
        d = std::move(*both);
    }
    std::vector<std::vector<std::uint32_t>> succ(d->edges.size());
    for (std::size_t s = 0; s < d->edges.size(); ++s)
        for (const auto& e : d->edges[s])
            succ[s].push_back(e.to);
    auto lengths = table_of(succ, d->accept);
    if (!lengths)
        return lengths.error();
    pattern_regex out;
    out.anchored_start_ = out.anchored_end_ = true;
    out.lengths_ = std::move(*lengths);
    out.dfa_ = std::make_shared<const pattern_dfa>(std::move(*d));
    out.start_ = pattern_dfa::start;
    return out;
}

std::uint64_t pattern_regex::settle(std::uint64_t next) const noexcept {
    if (!anchored_start_)
        next |= 1ULL;
    next &= live_mask_;
    if (!anchored_end_ && (next & match_mask_))
        return sticky_match; // matched with a free end: nothing else matters any more
    return next;
}

std::uint64_t pattern_regex::step(std::uint64_t state, std::uint32_t cp) const noexcept {
    if (dfa_)
        return state == 0 ? 0 : dfa_->step(static_cast<std::uint32_t>(state), cp);
    if (state & sticky_match)
        return sticky_match;
    std::uint64_t next = 0;
    for (std::uint64_t m = state; m; m &= m - 1) {
        const auto k = static_cast<std::size_t>(__builtin_ctzll(m));
        for (const auto& [cls, t] : moves_[k])
            if (classes_[static_cast<std::size_t>(cls)].contains(cp))
                next |= 1ULL << t;
    }
    return settle(next);
}

bool pattern_regex::accepts(std::uint64_t state) const noexcept {
    if (dfa_)
        return state != 0 && dfa_->accept[static_cast<std::size_t>(state)];
    return (state & sticky_match) != 0 || (state & match_mask_) != 0;
}

std::uint64_t pattern_regex::next_length(std::uint64_t state, std::uint64_t lo) const noexcept {
    if (state & sticky_match)
        return lo;
    // A search with a free end matches every length from its shortest match on.
    const std::uint64_t from = anchored_end_ ? lo : 0;
    std::uint64_t best = length_table::none;
    for (std::uint64_t m = state; m; m &= m - 1)
        best = std::min(best, lengths_->next(static_cast<std::uint32_t>(__builtin_ctzll(m)), from));
    if (!anchored_start_) {
        // The entry comes back after every character: a match may start at any later one.
        const auto e0 = lengths_->first(0);
        if (e0 != length_table::none)
            best = std::min(best, std::max(from, e0 + 1));
    }
    if (!anchored_end_ && best != length_table::none)
        best = std::max(best, lo);
    return best;
}

bool pattern_regex::fits(std::uint64_t state, std::uint64_t lo, std::uint64_t hi) const noexcept {
    if (state == 0 || lo > hi)
        return false;
    const auto k =
        dfa_ ? lengths_->next(static_cast<std::uint32_t>(state), lo) : next_length(state, lo);
    return k != length_table::none && k <= hi;
}

bool pattern_regex::can_step_within(std::uint64_t state, std::uint32_t cp_lo, std::uint32_t cp_hi,
                                    std::uint64_t lo, std::uint64_t hi) const {
    if (state == 0)
        return false;
    if (dfa_) {
        for (const auto& e : dfa_->edges[static_cast<std::size_t>(state)])
            if (e.lo <= cp_hi && cp_lo <= e.hi && fits(e.to, lo, hi))
                return true;
        return false;
    }
    if (state & sticky_match)
        return lo <= hi;
    // The state after a character holds at least one of these targets (and the entry of a
    // search): completions of a set are those of its members, so one target that fits is enough.
    for (std::uint64_t m = state; m; m &= m - 1) {
        const auto k = static_cast<std::size_t>(__builtin_ctzll(m));
        for (const auto& [cls, t] : moves_[k])
            if (classes_[static_cast<std::size_t>(cls)].intersects(cp_lo, cp_hi) &&
                fits(settle(1ULL << t), lo, hi))
                return true;
    }
    return !anchored_start_ && fits(settle(0), lo, hi);
}

std::uint64_t pattern_regex::longest_first() const noexcept {
    // A search also ends one character after the entry's shortest match at the latest.
    return lengths_->longest_first() + (anchored_start_ ? 0 : 1);
}

} // namespace bitnet::model::constrain
