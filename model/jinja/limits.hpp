// The bounds every template and every render meets. Templates come from model files (or an
// operator's file) and render client data: each dimension that either controls has a limit, and
// passing one is an error naming it, never a crash, a hang or unbounded memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bitnet::model::jinja {

struct limits {
    std::size_t max_template_bytes = 1 << 20; ///< template source
    /// Blocks nested in blocks, and brackets/operands nested in one expression, at parse time.
    std::uint32_t max_nesting = 64;
    /// The evaluator's own recursion (AST depth times macro calls): checked before recursing.
    std::uint32_t max_eval_depth = 512;
    std::uint32_t max_macro_depth = 64;          ///< macro calls nested in macro calls
    std::uint64_t max_loop_iterations = 100'000; ///< all loop iterations of one render, and range()
    std::size_t max_output_bytes = 8 << 20;      ///< the rendered text, and any one string or list
    std::uint64_t max_steps = 20'000'000; ///< expression and statement evaluations per render
    std::uint32_t max_input_depth = 64;   ///< arrays/objects nested in input JSON
    /// Lists, dicts and namespaces nested in any value a render builds (so freeing, printing or
    /// comparing one never recurses deeper).
    std::uint32_t max_value_depth = 128;
    std::size_t max_input_bytes = 16 << 20; ///< input JSON text (messages, tools, kwargs)
};

} // namespace bitnet::model::jinja
