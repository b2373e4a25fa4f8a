#include "model/constrain/grammar_passes.hpp"

#include "model/constrain/schema_errors.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_map>

namespace bitnet::model::constrain {

namespace {

void sort_unique(std::vector<std::uint32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

/// Calls `f` on every child pointer of node `x` (a reference, so `f` may rewrite it).
template <class F>
void for_each_child(node& x, F&& f) {
    for (auto& a : x.alts)
        f(a);
    for (auto& v : x.values)
        f(v);
    for (auto& p : x.prefix)
        f(p);
    f(x.additional);
    f(x.other_key);
    f(x.items);
}

/// Every any_of's alternatives become the non-any_of nodes it reaches through any_of edges
/// alone (an iterative depth-first walk). Reaching an any_of that is still open is a cycle that
/// writes no byte: left recursion, which would fork without end.
result<void> flatten(grammar& g, const std::vector<std::string>& origin,
                     const compile_budget& budget) {
    auto& nodes = g.nodes;
    const std::size_t n = nodes.size();
    std::vector<std::uint8_t> color(n, 0); // 0 new, 1 open, 2 done
    std::vector<std::vector<std::uint32_t>> leaves(n);
    std::size_t total = 0, visited = 0;
    std::vector<std::pair<std::uint32_t, std::size_t>> stack;
    for (std::uint32_t s = 0; s < n; ++s) {
        if (nodes[s].kind != node_kind::any_of || color[s] == 2)
            continue;
        stack.assign(1, {s, 0});
        color[s] = 1;
        while (!stack.empty()) {
            const auto a = stack.back().first;
            const auto i = stack.back().second;
            if (i < nodes[a].alts.size()) {
                ++stack.back().second;
                const auto c = nodes[a].alts[i];
                if (nodes[c].kind != node_kind::any_of || color[c] == 2)
                    continue;
                if (color[c] == 1) {
                    const auto& where = !origin[c].empty() ? origin[c] : origin[a];
                    return error{errc::invalid_argument,
                                 "invalid JSON Schema: a cycle of $ref/anyOf that writes no byte "
                                 "before it comes back (left recursion)" +
                                     (where.empty() ? std::string() : ", through " + where),
                                 "schema"};
                }
                color[c] = 1;
                stack.emplace_back(c, 0);
                continue;
            }
            std::vector<std::uint32_t> out;
            for (auto c : nodes[a].alts) {
                if (nodes[c].kind != node_kind::any_of)
                    out.push_back(c);
                else
                    out.insert(out.end(), leaves[c].begin(), leaves[c].end());
                if (out.size() > 2 * limits::max_alternatives)
                    sort_unique(out);
                if (out.size() > limits::max_alternatives)
                    break;
            }
            sort_unique(out);
            if (out.size() > limits::max_alternatives)
                return limit_error("max_alternatives", limits::max_alternatives,
                                   "an anyOf (with the anyOfs and $refs it opens) offers more "
                                   "alternatives than that");
            total += out.size();
            if (total > 16 * limits::max_nodes)
                return limit_error("max_alternatives", limits::max_alternatives,
                                   "the schema's anyOfs offer too many alternatives in all");
            leaves[a] = std::move(out);
            color[a] = 2;
            stack.pop_back();
            if ((++visited & 1023) == 0)
                if (auto e = budget.spent())
                    return *e;
        }
    }
    for (std::uint32_t a = 0; a < n; ++a)
        if (nodes[a].kind == node_kind::any_of)
            nodes[a].alts = std::move(leaves[a]);
    return {};
}

/// The largest magnitude a grammar integer can have (19 digits).
wide_int max_integer() {
    wide_int m = 1;
    for (std::uint32_t k = 0; k < limits::number_integer_digits; ++k)
        m *= 10;
    return m - 1;
}

bool integer_has_value(const node& x) {
    const wide_int top = max_integer();
    const wide_int lo = x.has_lo ? std::max(x.lo, -top) : -top;
    const wide_int hi = x.has_hi ? std::min(x.hi, top) : top;
    if (lo > hi)
        return false;
    if (x.multiple_of == 0)
        return true;
    const wide_int m = x.multiple_of;
    // The least multiple at or above lo (floor division for negative lo).
    wide_int q = lo / m;
    if (q * m < lo)
        ++q;
    return q * m <= hi;
}

bool number_has_value(const node& x) {
    wide_int top = max_integer() + 1;
    for (std::uint32_t k = 0; k < limits::number_fraction_digits; ++k)
        top *= 10;
    const wide_int lo = x.has_lo ? std::max(x.lo, -top) : -top;
    const wide_int hi = x.has_hi ? std::min(x.hi, top) : top;
    return lo <= hi;
}

/// Which nodes admit some finite value (least fixpoint, by sweeps), then every way into one that
/// does not is cut: an optional property's value becomes `nothing` (the matcher never opens the
/// name), other names and further items are closed, anyOf drops the alternative.
result<void> prune(grammar& g, const compile_budget& budget) {
    auto& nodes = g.nodes;
    const std::size_t n = nodes.size();
    std::vector<char> ok(n, 0);
    auto productive = [&](std::uint32_t i) {
        const node& x = nodes[i];
        auto yes = [&](std::uint32_t c) { return c != no_node && ok[c]; };
        switch (x.kind) {
        case node_kind::nothing:
            return false;
        case node_kind::literal:
        case node_kind::literal_set:
        case node_kind::text:
            return true;
        case node_kind::call_union: // every function's arguments must admit a value
            return std::all_of(x.values.begin(), x.values.end(), yes);
        case node_kind::string:
            return x.min_count <= x.max_count;
        case node_kind::number:
            return number_has_value(x);
        case node_kind::integer:
            return integer_has_value(x);
        case node_kind::any_of:
            return std::any_of(x.alts.begin(), x.alts.end(), yes);
        case node_kind::object:
            if (x.min_count > x.max_count)
                return false;
            for (std::size_t k = 0; k < x.keys.size(); ++k)
                if (((x.required >> k) & 1) && !yes(x.values[k]))
                    return false;
            return true;
        case node_kind::array:
            if (x.min_count > x.max_count)
                return false;
            for (std::uint32_t k = 0; k < x.min_count && k < x.prefix.size(); ++k)
                if (!yes(x.prefix[k]))
                    return false;
            return x.min_count <= x.prefix.size() || yes(x.items);
        }
        return false;
    };
    for (bool changed = true; changed;) {
        changed = false;
        // References point mostly to later nodes: a backward sweep carries a chain at once.
        for (std::size_t k = n; k-- > 0;)
            if (!ok[k] && productive(static_cast<std::uint32_t>(k)))
                ok[k] = changed = true;
        for (std::size_t k = 0; k < n; ++k)
            if (!ok[k] && productive(static_cast<std::uint32_t>(k)))
                ok[k] = changed = true;
        if (auto e = budget.spent())
            return *e;
    }
    if (g.root == no_node || !ok[g.root])
        return error{errc::invalid_argument,
                     "invalid JSON Schema: it admits no finite JSON value (every alternative "
                     "needs a value that never ends, or none at all)",
                     "schema"};
    std::uint32_t nothing = no_node;
    for (std::uint32_t i = 0; i < n && nothing == no_node; ++i)
        if (nodes[i].kind == node_kind::nothing)
            nothing = i;
    if (nothing == no_node) {
        nodes.push_back(node{});
        nothing = static_cast<std::uint32_t>(nodes.size() - 1);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
        node& x = nodes[i];
        if (!ok[i])
            continue;
        std::erase_if(x.alts, [&](std::uint32_t c) { return !ok[c]; });
        for (std::size_t k = 0; k < x.values.size(); ++k)
            if (!ok[x.values[k]])
                x.values[k] = nothing;
        if (x.additional != no_node && !ok[x.additional]) {
            x.additional = no_node;
            x.other_key = no_node;
        }
        if (x.items != no_node && !ok[x.items])
            x.items = no_node;
        for (std::size_t k = 0; k < x.prefix.size(); ++k)
            if (!ok[x.prefix[k]]) {
                x.max_count = std::min(x.max_count, static_cast<std::uint32_t>(k));
                break;
            }
    }
    return {};
}

void put(std::string& s, const void* p, std::size_t n) {
    s.append(static_cast<const char*>(p), n);
}
template <class T>
void put(std::string& s, const T& v) {
    put(s, &v, sizeof v);
}

/// Node `i`'s signature under the classes `cls`: equal signatures, interchangeable nodes.
void signature(const grammar& g, std::uint32_t i, const std::vector<std::uint32_t>& cls,
               std::string& s) {
    const node& x = g.nodes[i];
    auto child = [&](std::uint32_t c) { put(s, c == no_node ? no_node : cls[c]); };
    s.clear();
    put(s, cls[i]);
    put(s, x.kind);
    std::vector<std::uint32_t> alts;
    for (auto a : x.alts)
        alts.push_back(cls[a]);
    sort_unique(alts); // anyOf is a set
    put(s, alts.size());
    for (auto a : alts)
        put(s, a);
    put(s, x.keys.size());
    for (std::size_t k = 0; k < x.keys.size(); ++k) {
        put(s, x.keys[k].size());
        s += x.keys[k];
        child(x.values[k]);
    }
    put(s, x.required);
    child(x.additional);
    child(x.other_key);
    put(s, x.prefix.size());
    for (auto p : x.prefix)
        child(p);
    child(x.items);
    put(s, x.min_count);
    put(s, x.max_count);
    put(s, x.count_cap);
    put(s, x.regex);
    put(s, x.exclude);
    put(s, x.has_lo);
    put(s, x.has_hi);
    put(s, x.lo);
    put(s, x.hi);
    put(s, x.multiple_of);
    put(s, x.set);
    put(s, x.bytes.size());
    s += x.bytes;
}

/// Nodes that write the same language step alike: partition refinement (Moore) finds the
/// classes of structurally equal nodes, cycles included, and every pointer then goes to one
/// representative, so two copies of a recursive alternative are one configuration.
result<void> merge_equal(grammar& g, const compile_budget& budget) {
    const std::size_t n = g.nodes.size();
    std::vector<std::uint32_t> cls(n, 0), next(n);
    std::size_t classes = 1;
    std::string sig;
    for (;;) {
        std::unordered_map<std::string, std::uint32_t> ids;
        ids.reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) {
            signature(g, i, cls, sig);
            next[i] = ids.emplace(sig, static_cast<std::uint32_t>(ids.size())).first->second;
        }
        const bool stable = ids.size() == classes;
        classes = ids.size();
        cls.swap(next);
        if (stable)
            break;
        if (auto e = budget.spent())
            return *e;
    }
    std::vector<std::uint32_t> rep(classes, no_node);
    for (std::uint32_t i = 0; i < n; ++i)
        if (rep[cls[i]] == no_node)
            rep[cls[i]] = i;
    auto to_rep = [&](std::uint32_t& c) {
        if (c != no_node)
            c = rep[cls[c]];
    };
    for (auto& x : g.nodes) {
        for_each_child(x, to_rep);
        sort_unique(x.alts);
    }
    to_rep(g.root);
    return {};
}

/// Strings alike but for their lengths, alternatives of one any_of, whose length ranges meet or
/// touch are one string over the joined range: the union of "matches the pattern (or is any
/// string) and has m..n code points" over ranges that leave no gap is the same over their
/// join. Without it an anyOf of 32 strings that differ only in maxLength keeps 32
/// configurations alive through every byte of the string.
void join_string_lengths(grammar& g) {
    const std::size_t n_before = g.nodes.size();
    for (std::size_t i = 0; i < n_before; ++i) {
        if (g.nodes[i].kind != node_kind::any_of)
            continue;
        // The alternatives that are strings, ordered by what must match (pattern, excluded
        // contents), then by the start of their range.
        std::vector<std::uint32_t> strings, others;
        for (auto a : g.nodes[i].alts) {
            const node& x = g.nodes[a];
            (x.kind == node_kind::string && x.min_count <= x.max_count ? strings : others)
                .push_back(a);
        }
        if (strings.size() < 2)
            continue;
        std::sort(strings.begin(), strings.end(), [&](std::uint32_t a, std::uint32_t b) {
            const node& x = g.nodes[a];
            const node& y = g.nodes[b];
            return std::tie(x.regex, x.exclude, x.min_count, x.max_count) <
                   std::tie(y.regex, y.exclude, y.min_count, y.max_count);
        });
        std::vector<std::uint32_t> alts = std::move(others);
        bool joined = false;
        for (std::size_t k = 0; k < strings.size();) {
            const node first = g.nodes[strings[k]];
            std::uint32_t hi = first.max_count;
            std::size_t end = k + 1;
            for (; end < strings.size(); ++end) {
                const node& y = g.nodes[strings[end]];
                if (y.regex != first.regex || y.exclude != first.exclude)
                    break;
                if (hi != unbounded && std::uint64_t{y.min_count} > std::uint64_t{hi} + 1)
                    break; // a gap: lengths between the two ranges are in neither
                hi = (hi == unbounded || y.max_count == unbounded) ? unbounded
                                                                   : std::max(hi, y.max_count);
            }
            if (end - k == 1) {
                alts.push_back(strings[k]);
            } else {
                node x = first; // sorted by start: the first range starts lowest
                x.max_count = hi;
                x.count_cap = std::max(x.min_count, hi == unbounded ? 0u : hi);
                g.nodes.push_back(std::move(x));
                alts.push_back(static_cast<std::uint32_t>(g.nodes.size() - 1));
                joined = true;
            }
            k = end;
        }
        if (joined) {
            sort_unique(alts);
            g.nodes[i].alts = std::move(alts);
        }
    }
}

/// A pointer to an any_of of one alternative points to that alternative.
void collapse_aliases(grammar& g) {
    auto skip = [&](std::uint32_t& c) {
        if (c != no_node && g.nodes[c].kind == node_kind::any_of && g.nodes[c].alts.size() == 1)
            c = g.nodes[c].alts[0];
    };
    for (auto& x : g.nodes)
        for_each_child(x, skip);
    skip(g.root);
}

} // namespace

std::optional<error> compile_budget::spent() const {
    if (cancel && cancel->cancelled.load(std::memory_order_relaxed))
        return error{errc::cancelled, "the schema's compile was cancelled"};
    if (std::chrono::steady_clock::now() > deadline)
        return limit_error("max_compile_ms", static_cast<std::size_t>(limits::max_compile_ms),
                           "compiling it took longer than that many milliseconds");
    return std::nullopt;
}

result<void> finish_grammar(grammar& g, const std::vector<std::string>& origin,
                            const compile_budget& budget) {
    if (auto r = flatten(g, origin, budget); !r)
        return r;
    if (auto r = prune(g, budget); !r)
        return r;
    if (auto r = merge_equal(g, budget); !r)
        return r;
    join_string_lengths(g);
    collapse_aliases(g);
    return {};
}

} // namespace bitnet::model::constrain
