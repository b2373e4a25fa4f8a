// The parser's internals, shared by parser.cpp (statements) and parser_expr.cpp (expressions).
// Not a public header: include parser.hpp.
#pragma once

#include "model/jinja/ast.hpp"
#include "model/jinja/lexer.hpp"
#include "model/jinja/limits.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model::jinja::detail {

class parser {
public:
    parser(const std::vector<token>& t, const limits& lim)
        : t_(t)
        , lim_(lim) {}

    body run() {
        std::string end;
        auto b = subparse({}, end);
        if (cur().t != tok::eof)
            fail(cur().pos, "unexpected tag");
        return b;
    }

private:
    const std::vector<token>& t_;
    const limits& lim_;
    std::size_t i_ = 0;
    std::uint32_t depth_ = 0;
    std::uint32_t loops_ = 0; ///< for-loops around the statement being parsed

    /// Counts one level of nesting for its lifetime; throws past the limit.
    struct guard {
        parser& p;
        guard(parser& owner, std::size_t at)
            : p(owner) {
            if (++p.depth_ > p.lim_.max_nesting)
                throw template_error(at,
                                     "blocks and expressions are nested deeper than " +
                                         std::to_string(p.lim_.max_nesting) + " levels",
                                     failure::limit);
        }
        ~guard() { --p.depth_; }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
    };

    [[noreturn]] static void fail(std::size_t at, const std::string& what) {
        throw template_error(at, what);
    }
    [[noreturn]] static void unsupported(std::size_t at, const std::string& what) {
        throw template_error(at, what, failure::unsupported);
    }

    const token& cur() const { return t_[i_]; }
    const token& peek(std::size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
    const token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
    bool is_op(std::string_view op) const { return cur().t == tok::op && cur().s == op; }
    bool is_name(std::string_view n) const { return cur().t == tok::name && cur().s == n; }
    void expect_op(std::string_view op) {
        if (!is_op(op))
            fail(cur().pos, "expected '" + std::string(op) + "'" + found());
        next();
    }
    std::string expect_name() {
        if (cur().t != tok::name)
            fail(cur().pos, "expected a name" + found());
        return next().s;
    }
    void expect_block_end() {
        if (cur().t != tok::block_end)
            fail(cur().pos, "expected the end of the tag ('%}')" + found());
        next();
    }
    std::string found() const {
        switch (cur().t) {
        case tok::eof:
            return ", found the end of the template";
        case tok::block_end:
            return ", found '%}'";
        case tok::var_end:
            return ", found '}}'";
        case tok::name:
        case tok::op:
            return ", found '" + cur().s + "'";
        default:
            return "";
        }
    }

    // statements (parser.cpp), expressions (parser_expr.cpp)
    /// Statements up to a block tag named in `ends` (left unconsumed after its name: `end` gets
    /// it), or the end of the template when `ends` is empty.
    body subparse(std::initializer_list<std::string_view> ends, std::string& end);
    stmt statement(std::size_t at);
    stmt block_of(st kind, std::size_t at, std::string_view end_tag);
    stmt parse_if(std::size_t at);
    stmt parse_for(std::size_t at);
    /// `a` or `a, b` (for and set targets), up to `stop`.
    std::vector<std::string> assign_targets(std::string_view stop);
    stmt parse_set(std::size_t at);
    stmt parse_macro(std::size_t at);
    stmt parse_call_block(std::size_t at);
    stmt parse_filter_block(std::size_t at);
    static expr_ptr make(ex k, std::size_t at);
    bool tuple_end(std::initializer_list<std::string_view> extra) const;
    /// An expression, or a tuple when commas separate several (a tuple is a list here).
    expr_ptr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra,
                         bool explicit_parens = false);
    expr_ptr parse_expression(bool with_condexpr);
    expr_ptr parse_or();
    expr_ptr parse_and();
    expr_ptr parse_not();
    expr_ptr parse_compare();
    expr_ptr binary(std::string op, std::size_t at, expr_ptr l, expr_ptr r);
    expr_ptr parse_math1();
    expr_ptr parse_concat();
    expr_ptr parse_math2();
    expr_ptr parse_pow();
    expr_ptr parse_unary(bool with_filter);
    expr_ptr literal(value v, std::size_t at);
    expr_ptr parse_primary();
    expr_ptr parse_list();
    expr_ptr parse_dict();
    expr_ptr parse_postfix(expr_ptr node);
    expr_ptr parse_filter_expr(expr_ptr node);
    expr_ptr parse_subscript(expr_ptr node);
    /// `(args, key=value)`, appended to `e`.
    void call_arguments(expr& e);
    expr_ptr parse_call(expr_ptr callee);
    std::string dotted_name();
    /// `| name(args)`; `input` null for {% filter %} and block set filters.
    expr_ptr parse_filter(expr_ptr input, bool pipe = true);
    expr_ptr parse_test(expr_ptr input);
};

} // namespace bitnet::model::jinja::detail
