// The parsed form of a template: expressions and statements, owned by the compiled template and
// read-only while rendering. Depth is bounded at parse time (limits::max_nesting).
#pragma once

#include "model/jinja/value.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::model::jinja {

struct expr;
using expr_ptr = std::unique_ptr<expr>;

enum class ex : std::uint8_t {
    literal, ///< lit
    name,    ///< name
    list,    ///< args: the items
    dict,    ///< args: key, value, key, value, ...
    attr,    ///< args[0].name
    item,    ///< args[0][args[1]]
    slice,   ///< args[0][args[1]:args[2]:args[3]] (null parts absent)
    call,    ///< args[0](args[1..], kwargs)
    filter,  ///< args[0] | name(args[1..], kwargs)
    test,    ///< args[0] is [not] name(args[1..], kwargs); negated
    not_,    ///< not args[0]
    neg,     ///< -args[0]
    pos,     ///< +args[0]
    binary,  ///< args[0] op args[1]: + - * / // % ** ~
    and_,    ///< args[0] and args[1]
    or_,     ///< args[0] or args[1]
    compare, ///< args[0] ops[0] args[1] ops[1] args[2] ... (chained)
    cond,    ///< args[1] if args[0] else args[2] (args[2] null: undefined)
};

struct expr {
    ex k = ex::literal;
    std::size_t pos = 0; ///< byte offset in the source
    value lit;
    std::string name; ///< name, attribute, filter, test or operator
    std::vector<expr_ptr> args;
    std::vector<std::pair<std::string, expr_ptr>> kwargs;
    std::vector<std::string> ops; ///< compare: the operators
    bool negated = false;
};

struct stmt;
using body = std::vector<stmt>;

/// A macro: parameters (with defaults) and its body. Lives in the AST; values point at it.
struct macro_def {
    std::string name;
    std::vector<std::string> params;
    std::vector<expr_ptr> defaults; ///< per parameter; null = required
    body statements;
    std::size_t pos = 0;
};

enum class st : std::uint8_t {
    text,         ///< output text
    output,       ///< {{ e }}
    if_,          ///< branches (cond, body) then else_body
    for_,         ///< for targets in e [if filter]: statements, else else_body
    set,          ///< set targets = e (target_attr: set targets[0].target_attr = e)
    set_block,    ///< {% set targets[0] %}statements{% endset %}, then filters
    macro,        ///< macro definition
    call_block,   ///< {% call e %}statements{% endcall %}: e is a call of a macro
    filter_block, ///< {% filter ... %}statements{% endfilter %}
    generation,   ///< {% generation %}statements{% endgeneration %} (Transformers' tag)
    break_,
    continue_,
};

struct stmt {
    stmt() = default;
    stmt(st kind, std::size_t at)
        : k(kind)
        , pos(at) {}

    st k = st::text;
    std::size_t pos = 0;
    std::string text;
    expr_ptr e;
    expr_ptr filter; ///< for: the `if` condition
    std::vector<std::pair<expr_ptr, body>> branches;
    body statements;
    body else_body;
    std::vector<std::string> targets;
    std::string target_attr;
    std::vector<expr_ptr> filters; ///< set_block/filter_block: filter nodes with a null input
    std::shared_ptr<macro_def> macro;
};

} // namespace bitnet::model::jinja
