#include "model/constrain/pattern_dfa.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace bitnet::model::constrain {

namespace {

constexpr std::uint32_t end_of_unicode = 0x110000;

error too_many_states(std::size_t max_states) {
    return error{errc::internal,
                 "a format's automaton has more than " + std::to_string(max_states) + " states"};
}

/// Sorts `edges` and joins neighbours that go to the same state.
void tidy(std::vector<pattern_dfa::edge>& edges) {
    std::sort(edges.begin(), edges.end(), [](const auto& x, const auto& y) { return x.lo < y.lo; });
    std::vector<pattern_dfa::edge> out;
    for (const auto& e : edges) {
        if (!out.empty() && out.back().to == e.to && out.back().hi + 1 == e.lo)
            out.back().hi = e.hi;
        else
            out.push_back(e);
    }
    edges = std::move(out);
}

/// Cuts every edge into a state that cannot reach an accepting one (so a step never enters a
/// state without a future) and empties those states.
void trim(pattern_dfa& d) {
    const std::size_t n = d.edges.size();
    std::vector<std::vector<std::uint32_t>> preds(n);
    for (std::uint32_t s = 0; s < n; ++s)
        for (const auto& e : d.edges[s])
            preds[e.to].push_back(s);
    std::vector<bool> live(n, false);
    std::vector<std::uint32_t> work;
    for (std::uint32_t s = 1; s < n; ++s)
        if (d.accept[s]) {
            live[s] = true;
            work.push_back(s);
        }
    while (!work.empty()) {
        const auto s = work.back();
        work.pop_back();
        for (auto p : preds[s])
            if (!live[p]) {
                live[p] = true;
                work.push_back(p);
            }
    }
    for (std::uint32_t s = 0; s < n; ++s) {
        if (!live[s]) {
            d.edges[s].clear();
            continue;
        }
        std::erase_if(d.edges[s], [&](const auto& e) { return !live[e.to]; });
    }
}

} // namespace

std::uint32_t pattern_dfa::step(std::uint32_t state, std::uint32_t cp) const noexcept {
    const auto& es = edges[state];
    auto it = std::upper_bound(es.begin(), es.end(), cp,
                               [](std::uint32_t v, const edge& e) { return v < e.lo; });
    if (it == es.begin())
        return 0;
    --it;
    return cp <= it->hi ? it->to : 0;
}

result<pattern_dfa> determinize(const reduced_nfa& nfa, std::size_t max_states) {
    if (!nfa.anchored_start || !nfa.anchored_end)
        return error{errc::internal, "only anchored patterns are determinized"};
    // The alphabet cut where any class starts or ends: every class holds each piece whole.
    std::vector<std::uint32_t> cuts{0, end_of_unicode};
    for (const auto& c : nfa.classes)
        for (const auto& [lo, hi] : c.ranges) {
            cuts.push_back(lo);
            cuts.push_back(hi + 1);
        }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const std::size_t pieces = cuts.size() - 1;
    std::vector<std::vector<std::uint32_t>> pieces_of(nfa.classes.size());
    for (std::size_t c = 0; c < nfa.classes.size(); ++c)
        for (std::size_t i = 0; i < pieces; ++i)
            if (nfa.classes[c].contains(cuts[i]))
                pieces_of[c].push_back(static_cast<std::uint32_t>(i));
    const std::size_t words = (nfa.moves.size() + 63) / 64;
    using set = std::vector<std::uint64_t>;
    std::map<set, std::uint32_t> ids;
    std::vector<set> sets{set(words, 0)}; // state 0: dead
    set first(words, 0);
    first[0] = 1;
    ids.emplace(first, 1);
    sets.push_back(first);
    pattern_dfa d;
    d.edges.resize(2);
    for (std::size_t s = 1; s < sets.size(); ++s) {
        std::vector<set> targets(pieces);
        for (std::size_t a = 0; a < nfa.moves.size(); ++a) {
            if (!((sets[s][a >> 6] >> (a & 63)) & 1))
                continue;
            for (const auto& [cls, t] : nfa.moves[a])
                for (auto i : pieces_of[static_cast<std::size_t>(cls)]) {
                    if (targets[i].empty())
                        targets[i].assign(words, 0);
                    targets[i][t >> 6] |= 1ULL << (t & 63);
                }
        }
        std::vector<pattern_dfa::edge> es;
        for (std::size_t i = 0; i < pieces; ++i) {
            if (targets[i].empty())
                continue;
            auto [it, fresh] = ids.emplace(targets[i], static_cast<std::uint32_t>(sets.size()));
            if (fresh) {
                if (sets.size() >= max_states)
                    return too_many_states(max_states);
                sets.push_back(targets[i]);
                d.edges.emplace_back();
            }
            es.push_back({cuts[i], cuts[i + 1] - 1, it->second});
        }
        tidy(es);
        d.edges[s] = std::move(es);
    }
    d.accept.assign(sets.size(), false);
    for (std::size_t s = 1; s < sets.size(); ++s)
        for (std::size_t a = 0; a < nfa.match.size(); ++a)
            if (nfa.match[a] && ((sets[s][a >> 6] >> (a & 63)) & 1))
                d.accept[s] = true;
    trim(d);
    return d;
}

result<pattern_dfa> intersect(const pattern_dfa& a, const pattern_dfa& b, std::size_t max_states) {
    std::unordered_map<std::uint64_t, std::uint32_t> ids;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs{{0, 0}, {1, 1}};
    ids.emplace((1ULL << 32) | 1, 1);
    pattern_dfa d;
    d.edges.resize(2);
    for (std::size_t s = 1; s < pairs.size(); ++s) {
        const auto [x, y] = pairs[s];
        std::vector<pattern_dfa::edge> es;
        for (const auto& ea : a.edges[x])
            for (const auto& eb : b.edges[y]) {
                const auto lo = std::max(ea.lo, eb.lo), hi = std::min(ea.hi, eb.hi);
                if (lo > hi)
                    continue;
                const std::uint64_t key = (std::uint64_t{ea.to} << 32) | eb.to;
                auto [it, fresh] = ids.emplace(key, static_cast<std::uint32_t>(pairs.size()));
                if (fresh) {
                    if (pairs.size() >= max_states)
                        return too_many_states(max_states);
                    pairs.emplace_back(ea.to, eb.to);
                    d.edges.emplace_back();
                }
                es.push_back({lo, hi, it->second});
            }
        tidy(es);
        d.edges[s] = std::move(es);
    }
    d.accept.assign(pairs.size(), false);
    for (std::size_t s = 1; s < pairs.size(); ++s)
        d.accept[s] = a.accept[pairs[s].first] && b.accept[pairs[s].second];
    trim(d);
    return d;
}

} // namespace bitnet::model::constrain
