// Expressions, by Jinja2's precedence: conditional, or, and, not, comparisons, + -, ~, * / // %,
// ** (left-associative, as Jinja parses it), unary - +, then primaries with their postfix
// subscripts, calls, filters and tests.
#include "model/jinja/builtins.hpp"
#include "model/jinja/parser_impl.hpp"

#include <algorithm>

namespace bitnet::model::jinja::detail {

expr_ptr parser::parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra,
                             bool explicit_parens) {
    const auto at = cur().pos;
    std::vector<expr_ptr> items;
    bool is_tuple = false;
    while (true) {
        if (!items.empty())
            expect_op(",");
        if (tuple_end(extra))
            break;
        items.push_back(with_condexpr ? parse_expression(true) : parse_or());
        if (is_op(","))
            is_tuple = true;
        else
            break;
    }
    if (!is_tuple) {
        if (items.empty()) {
            if (!explicit_parens)
                fail(at, "expected an expression" + found());
        } else
            return std::move(items.front());
    }
    auto e = make(ex::list, at);
    e->name = "tuple";
    e->args = std::move(items);
    return e;
}

expr_ptr parser::make(ex k, std::size_t at) {
    auto e = std::make_unique<expr>();
    e->k = k;
    e->pos = at;
    return e;
}

bool parser::tuple_end(std::initializer_list<std::string_view> extra) const {
    if (cur().t == tok::var_end || cur().t == tok::block_end || is_op(")"))
        return true;
    return cur().t == tok::name && std::find(extra.begin(), extra.end(), cur().s) != extra.end();
}

expr_ptr parser::parse_expression(bool with_condexpr) {
    guard g(*this, cur().pos);
    if (!with_condexpr)
        return parse_or();
    auto e = parse_or();
    while (is_name("if")) {
        const auto at = next().pos;
        auto c = make(ex::cond, at);
        c->args.push_back(parse_or()); // the condition
        c->args.push_back(std::move(e));
        if (is_name("else")) {
            next();
            c->args.push_back(parse_expression(true));
        } else
            c->args.push_back(nullptr);
        e = std::move(c);
    }
    return e;
}

expr_ptr parser::parse_or() {
    auto left = parse_and();
    while (is_name("or")) {
        auto e = make(ex::or_, next().pos);
        e->args.push_back(std::move(left));
        e->args.push_back(parse_and());
        left = std::move(e);
    }
    return left;
}

expr_ptr parser::parse_and() {
    auto left = parse_not();
    while (is_name("and")) {
        auto e = make(ex::and_, next().pos);
        e->args.push_back(std::move(left));
        e->args.push_back(parse_not());
        left = std::move(e);
    }
    return left;
}

expr_ptr parser::parse_not() {
    if (is_name("not")) {
        guard g(*this, cur().pos);
        auto e = make(ex::not_, next().pos);
        e->args.push_back(parse_not());
        return e;
    }
    return parse_compare();
}

expr_ptr parser::parse_compare() {
    const auto at = cur().pos;
    auto first = parse_math1();
    std::vector<std::string> ops;
    std::vector<expr_ptr> operands;
    while (true) {
        std::string op;
        if (cur().t == tok::op && (cur().s == "==" || cur().s == "!=" || cur().s == "<" ||
                                   cur().s == "<=" || cur().s == ">" || cur().s == ">="))
            op = next().s;
        else if (is_name("in"))
            op = next().s;
        else if (is_name("not") && peek().t == tok::name && peek().s == "in") {
            next();
            next();
            op = "notin";
        } else
            break;
        ops.push_back(op);
        operands.push_back(parse_math1());
    }
    if (ops.empty())
        return first;
    auto e = make(ex::compare, at);
    e->args.push_back(std::move(first));
    for (auto& o : operands)
        e->args.push_back(std::move(o));
    e->ops = std::move(ops);
    return e;
}

expr_ptr parser::binary(std::string op, std::size_t at, expr_ptr l, expr_ptr r) {
    auto e = make(ex::binary, at);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
}

expr_ptr parser::parse_math1() {
    auto left = parse_concat();
    while (is_op("+") || is_op("-")) {
        const auto& o = next();
        left = binary(o.s, o.pos, std::move(left), parse_concat());
    }
    return left;
}

expr_ptr parser::parse_concat() {
    auto left = parse_math2();
    while (is_op("~")) {
        const auto& o = next();
        left = binary("~", o.pos, std::move(left), parse_math2());
    }
    return left;
}

expr_ptr parser::parse_math2() {
    auto left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        const auto& o = next();
        left = binary(o.s, o.pos, std::move(left), parse_pow());
    }
    return left;
}

expr_ptr parser::parse_pow() {
    auto left = parse_unary(true);
    while (is_op("**")) {
        const auto& o = next();
        left = binary("**", o.pos, std::move(left), parse_unary(true));
    }
    return left;
}

expr_ptr parser::parse_unary(bool with_filter) {
    guard g(*this, cur().pos);
    expr_ptr node;
    if (is_op("-") || is_op("+")) {
        const auto& o = next();
        node = make(o.s == "-" ? ex::neg : ex::pos, o.pos);
        node->args.push_back(parse_unary(false));
    } else
        node = parse_primary();
    node = parse_postfix(std::move(node));
    if (with_filter)
        node = parse_filter_expr(std::move(node));
    return node;
}

expr_ptr parser::literal(value v, std::size_t at) {
    auto e = make(ex::literal, at);
    e->lit = std::move(v);
    return e;
}

expr_ptr parser::parse_primary() {
    const auto& tk = cur();
    const auto at = tk.pos;
    switch (tk.t) {
    case tok::name: {
        const auto n = next().s;
        if (n == "true" || n == "True")
            return literal(value::boolean(true), at);
        if (n == "false" || n == "False")
            return literal(value::boolean(false), at);
        if (n == "none" || n == "None")
            return literal(value::none(), at);
        auto e = make(ex::name, at);
        e->name = n;
        return e;
    }
    case tok::string: {
        std::string s;
        while (cur().t == tok::string)
            s += next().s;
        return literal(value::string(std::move(s)), at);
    }
    case tok::integer:
        return literal(value::integer(next().i), at);
    case tok::number:
        return literal(value::number(next().d), at);
    case tok::op:
        if (tk.s == "(") {
            next();
            auto e = parse_tuple(true, {}, true);
            expect_op(")");
            return e;
        }
        if (tk.s == "[")
            return parse_list();
        if (tk.s == "{")
            return parse_dict();
        break;
    default:
        break;
    }
    fail(at, "expected an expression" + found());
}

expr_ptr parser::parse_list() {
    auto e = make(ex::list, next().pos);
    while (!is_op("]")) {
        if (!e->args.empty())
            expect_op(",");
        if (is_op("]"))
            break;
        e->args.push_back(parse_expression(true));
    }
    next();
    return e;
}

expr_ptr parser::parse_dict() {
    auto e = make(ex::dict, next().pos);
    while (!is_op("}")) {
        if (!e->args.empty())
            expect_op(",");
        if (is_op("}"))
            break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
    }
    next();
    return e;
}

expr_ptr parser::parse_postfix(expr_ptr node) {
    while (true) {
        if (is_op(".") || is_op("["))
            node = parse_subscript(std::move(node));
        else if (is_op("("))
            node = parse_call(std::move(node));
        else
            return node;
    }
}

expr_ptr parser::parse_filter_expr(expr_ptr node) {
    while (true) {
        if (is_op("|"))
            node = parse_filter(std::move(node));
        else if (is_name("is"))
            node = parse_test(std::move(node));
        else if (is_op("("))
            node = parse_call(std::move(node));
        else
            return node;
    }
}

expr_ptr parser::parse_subscript(expr_ptr node) {
    const auto& tk = next();
    if (tk.s == ".") {
        if (cur().t == tok::integer) {
            auto e = make(ex::item, tk.pos);
            e->args.push_back(std::move(node));
            e->args.push_back(literal(value::integer(next().i), tk.pos));
            return e;
        }
        auto e = make(ex::attr, tk.pos);
        e->name = expect_name();
        e->args.push_back(std::move(node));
        return e;
    }
    guard g(*this, tk.pos);
    std::vector<expr_ptr> parts;
    bool slice = false;
    for (int part = 0; part < 3; ++part) {
        if (is_op(":") || is_op("]"))
            parts.push_back(nullptr);
        else
            parts.push_back(parse_expression(true));
        if (is_op(":") && part < 2) {
            slice = true;
            next();
            continue;
        }
        break;
    }
    if (is_op(","))
        unsupported(cur().pos, "tuple subscripts (a[x, y]) are not supported");
    expect_op("]");
    auto e = make(slice ? ex::slice : ex::item, tk.pos);
    e->args.push_back(std::move(node));
    if (!slice && !parts.front())
        fail(tk.pos, "expected a subscript");
    for (auto& p : parts)
        e->args.push_back(std::move(p));
    while (slice && e->args.size() < 4)
        e->args.push_back(nullptr);
    return e;
}

void parser::call_arguments(expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
        if (!first)
            expect_op(",");
        first = false;
        if (is_op(")"))
            break;
        if (is_op("*") || is_op("**"))
            unsupported(cur().pos, "*args and **kwargs in a call are not supported");
        if (cur().t == tok::name && peek().t == tok::op && peek().s == "=") {
            auto key = next().s;
            next();
            e.kwargs.emplace_back(std::move(key), parse_expression(true));
        } else {
            if (!e.kwargs.empty())
                fail(cur().pos, "a positional argument follows a keyword argument");
            e.args.push_back(parse_expression(true));
        }
    }
    next();
}

expr_ptr parser::parse_call(expr_ptr callee) {
    const auto at = cur().pos;
    guard g(*this, at);
    if (callee->k == ex::attr && !known_method(callee->name))
        unsupported(callee->pos, "the method ." + callee->name + "() is not supported");
    auto e = make(ex::call, at);
    e->args.push_back(std::move(callee));
    call_arguments(*e);
    return e;
}

std::string parser::dotted_name() {
    auto n = expect_name();
    while (is_op(".") && peek().t == tok::name) {
        next();
        n += "." + next().s;
    }
    return n;
}

expr_ptr parser::parse_filter(expr_ptr input, bool pipe) {
    const auto at = cur().pos;
    if (pipe)
        expect_op("|");
    auto e = make(ex::filter, at);
    e->name = dotted_name();
    if (!known_filter(e->name))
        unsupported(at, "the filter '" + e->name + "' is not supported");
    e->args.push_back(std::move(input));
    if (is_op("(")) {
        guard g(*this, at);
        call_arguments(*e);
    }
    return e;
}

expr_ptr parser::parse_test(expr_ptr input) {
    const auto at = next().pos;
    auto e = make(ex::test, at);
    if (is_name("not")) {
        next();
        e->negated = true;
    }
    e->name = dotted_name();
    if (!known_test(e->name))
        unsupported(at, "the test '" + e->name + "' is not supported");
    e->args.push_back(std::move(input));
    const auto& c = cur();
    if (is_op("(")) {
        guard g(*this, at);
        call_arguments(*e);
    } else if ((c.t == tok::name || c.t == tok::string || c.t == tok::integer ||
                c.t == tok::number || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is"))
            fail(c.pos, "tests cannot be chained with 'is'");
        guard g(*this, at);
        e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
}

} // namespace bitnet::model::jinja::detail
