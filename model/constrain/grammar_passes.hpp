// What the schema compiler does to its graph once every $ref is resolved, so that stepping has a
// cost bound no schema can escape: anyOf and $ref chains are flattened into one level of
// alternatives (a cycle among them, which would fork forever without writing a byte, is an
// error), subschemas that admit no finite value are cut out, structurally identical nodes
// (two copies of one recursive alternative) become one, so their configurations merge, and
// string alternatives that differ only in length ranges that meet become one string.
#pragma once

#include "common/error.hpp"
#include "model/constrain/grammar.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

/// The compile's budget: its deadline and a flag another thread may set.
struct compile_budget {
    std::chrono::steady_clock::time_point deadline;
    const cancel_token* cancel = nullptr;
    /// The error for a spent budget, or nothing.
    [[nodiscard]] std::optional<error> spent() const;
};

/// Flattens, prunes and merges `g` in place. `origin[i]` names node i's place in the schema
/// (for any_of nodes made by $ref: the reference), used in the error for a cycle.
[[nodiscard]] result<void> finish_grammar(grammar& g, const std::vector<std::string>& origin,
                                          const compile_budget& budget);

} // namespace bitnet::model::constrain
