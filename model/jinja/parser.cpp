#include "model/jinja/parser.hpp"

#include "model/jinja/parser_impl.hpp"

#include <algorithm>
#include <array>

namespace bitnet::model::jinja {

namespace detail {

namespace {

/// Jinja tags this interpreter knows to exist but does not implement.
constexpr std::array<std::string_view, 11> unsupported_tags{
    "include",    "import", "from", "extends",   "block",  "with",
    "autoescape", "trans",  "do",   "pluralize", "endwith"};

} // namespace

body parser::subparse(std::initializer_list<std::string_view> ends, std::string& end) {
    body out;
    while (true) {
        const auto& tk = cur();
        if (tk.t == tok::eof) {
            if (ends.size() != 0)
                fail(tk.pos, "the template ends inside a block: expected {% " +
                                 std::string(*ends.begin()) + " %}");
            return out;
        }
        if (tk.t == tok::data) {
            stmt s{st::text, tk.pos};
            s.text = tk.s;
            out.push_back(std::move(s));
            next();
        } else if (tk.t == tok::var_begin) {
            next();
            stmt s{st::output, tk.pos};
            s.e = parse_tuple(true, {});
            if (cur().t != tok::var_end)
                fail(cur().pos, "expected '}}'" + found());
            next();
            out.push_back(std::move(s));
        } else if (tk.t == tok::block_begin) {
            const auto at = tk.pos;
            next();
            if (cur().t != tok::name)
                fail(cur().pos, "expected a tag name after '{%'");
            const auto name = cur().s;
            if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
                next();
                end = name;
                return out;
            }
            out.push_back(statement(at));
        } else
            fail(tk.pos, "unexpected token");
    }
}

stmt parser::statement(std::size_t at) {
    guard g(*this, at);
    const auto name = next().s;
    if (name == "if")
        return parse_if(at);
    if (name == "for")
        return parse_for(at);
    if (name == "set")
        return parse_set(at);
    if (name == "macro")
        return parse_macro(at);
    if (name == "call")
        return parse_call_block(at);
    if (name == "filter")
        return parse_filter_block(at);
    if (name == "generation")
        return block_of(st::generation, at, "endgeneration");
    if (name == "break" || name == "continue") {
        if (loops_ == 0)
            fail(at, "{% " + name + " %} outside a for loop");
        expect_block_end();
        return stmt{name == "break" ? st::break_ : st::continue_, at};
    }
    if (std::find(unsupported_tags.begin(), unsupported_tags.end(), name) != unsupported_tags.end())
        unsupported(at, "the {% " + name + " %} tag is not supported");
    fail(at, "unknown tag '" + name + "'");
}

stmt parser::block_of(st kind, std::size_t at, std::string_view end_tag) {
    expect_block_end();
    stmt s{kind, at};
    std::string end;
    s.statements = subparse({end_tag}, end);
    expect_block_end();
    return s;
}

stmt parser::parse_if(std::size_t at) {
    stmt s{st::if_, at};
    auto cond = parse_tuple(false, {});
    while (true) {
        expect_block_end();
        std::string end;
        auto b = subparse({"elif", "else", "endif"}, end);
        s.branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
            cond = parse_tuple(false, {});
            continue;
        }
        if (end == "else") {
            expect_block_end();
            s.else_body = subparse({"endif"}, end);
        }
        expect_block_end();
        return s;
    }
}

stmt parser::parse_for(std::size_t at) {
    stmt s{st::for_, at};
    s.targets = assign_targets("in");
    if (!is_name("in"))
        fail(cur().pos, "expected 'in' in the for loop" + found());
    next();
    s.e = parse_tuple(false, {"recursive", "if"});
    if (is_name("recursive"))
        unsupported(cur().pos, "recursive for loops are not supported");
    if (is_name("if")) {
        next();
        s.filter = parse_expression(true);
    }
    expect_block_end();
    std::string end;
    ++loops_;
    s.statements = subparse({"endfor", "else"}, end);
    --loops_;
    if (end == "else") {
        expect_block_end();
        s.else_body = subparse({"endfor"}, end);
    }
    expect_block_end();
    return s;
}

std::vector<std::string> parser::assign_targets(std::string_view stop) {
    std::vector<std::string> names;
    const bool paren = is_op("(");
    if (paren)
        next();
    while (true) {
        names.push_back(expect_name());
        if (!is_op(","))
            break;
        next();
        if ((paren && is_op(")")) || is_name(stop))
            break;
    }
    if (paren)
        expect_op(")");
    return names;
}

stmt parser::parse_set(std::size_t at) {
    stmt s{st::set, at};
    if (cur().t == tok::name && peek().t == tok::op && peek().s == ".") {
        s.targets.push_back(next().s);
        next();
        s.target_attr = expect_name();
    } else
        s.targets = assign_targets("=");
    if (is_op("=")) {
        next();
        s.e = parse_tuple(true, {});
        expect_block_end();
        return s;
    }
    if (!s.target_attr.empty() || s.targets.size() != 1)
        fail(at, "a block {% set %} assigns one plain name");
    s.k = st::set_block;
    while (is_op("|"))
        s.filters.push_back(parse_filter(nullptr));
    expect_block_end();
    std::string end;
    s.statements = subparse({"endset"}, end);
    expect_block_end();
    return s;
}

stmt parser::parse_macro(std::size_t at) {
    auto m = std::make_shared<macro_def>();
    m->pos = at;
    m->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
        if (!m->params.empty())
            expect_op(",");
        if (is_op(")"))
            break;
        if (is_op("*") || is_op("**"))
            unsupported(cur().pos, "*args and **kwargs in a macro's parameters are not supported");
        m->params.push_back(expect_name());
        if (is_op("=")) {
            next();
            m->defaults.push_back(parse_expression(true));
        } else {
            if (std::any_of(m->defaults.begin(), m->defaults.end(),
                            [](const expr_ptr& d) { return d != nullptr; }))
                fail(cur().pos, "a macro parameter without a default follows one with a default");
            m->defaults.push_back(nullptr);
        }
    }
    next();
    expect_block_end();
    std::string end;
    const auto saved = loops_;
    loops_ = 0;
    m->statements = subparse({"endmacro"}, end);
    loops_ = saved;
    if (cur().t == tok::name)
        next(); // {% endmacro name %}
    expect_block_end();
    stmt s{st::macro, at};
    s.macro = std::move(m);
    return s;
}

stmt parser::parse_call_block(std::size_t at) {
    if (is_op("("))
        unsupported(at, "parameters of a {% call %} block's caller are not supported");
    stmt s{st::call_block, at};
    s.e = parse_expression(true);
    if (s.e->k != ex::call)
        fail(at, "{% call %} needs a macro call");
    expect_block_end();
    std::string end;
    s.statements = subparse({"endcall"}, end);
    expect_block_end();
    return s;
}

stmt parser::parse_filter_block(std::size_t at) {
    stmt s{st::filter_block, at};
    s.filters.push_back(parse_filter(nullptr, false));
    while (is_op("|"))
        s.filters.push_back(parse_filter(nullptr));
    expect_block_end();
    std::string end;
    s.statements = subparse({"endfilter"}, end);
    expect_block_end();
    return s;
}

} // namespace detail

body parse(const std::vector<token>& tokens, const limits& lim) {
    return detail::parser(tokens, lim).run();
}

} // namespace bitnet::model::jinja
