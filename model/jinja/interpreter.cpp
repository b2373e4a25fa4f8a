// Statements, scoping and calls. Expressions are in interpreter_expr.cpp.
#include "model/jinja/interpreter.hpp"

#include <algorithm>

namespace bitnet::model::jinja {

interpreter::depth_guard::depth_guard(interpreter& owner)
    : in(owner) {
    if (++in.depth_ > in.lim_.max_eval_depth) {
        --in.depth_;
        in.fail("the template nests evaluation deeper than " +
                    std::to_string(in.lim_.max_eval_depth) + " levels",
                failure::limit);
    }
}

void interpreter::fail(const std::string& what, failure why) const {
    throw template_error(pos_, what, why);
}

void interpreter::fail_undefined(const value& v) const {
    fail(v.name.empty() ? std::string("an undefined value was used") : v.name);
}

void interpreter::step(std::size_t at) {
    pos_ = at;
    if (++steps_ > lim_.max_steps)
        fail("the render took more than " + std::to_string(lim_.max_steps) + " steps",
             failure::limit);
}

void interpreter::count_iterations(std::uint64_t n) {
    iterations_ += n;
    if (iterations_ > lim_.max_loop_iterations)
        fail("loops ran more than " + std::to_string(lim_.max_loop_iterations) + " iterations",
             failure::limit);
}

void interpreter::check_size(std::size_t n) const {
    if (n > lim_.max_output_bytes)
        fail("a string or list grew past " + std::to_string(lim_.max_output_bytes) + " bytes",
             failure::limit);
}

void interpreter::emit(const text& t) {
    auto& out = *out_.back();
    check_size(out.s.size() + t.s.size());
    out.append(t);
}

text interpreter::render(const body& b, object vars) {
    frames_.clear();
    frames_.push_back({std::move(vars.items), -1});
    text out;
    out_.push_back(&out);
    exec(b);
    out_.pop_back();
    return out;
}

value interpreter::lookup(const std::string& name) const {
    for (int f = static_cast<int>(frames_.size()) - 1; f >= 0;) {
        const auto& vars = frames_[static_cast<std::size_t>(f)].vars;
        for (auto it = vars.rbegin(); it != vars.rend(); ++it)
            if (it->first == name)
                return it->second;
        f = frames_[static_cast<std::size_t>(f)].parent;
    }
    if (known_global(name))
        return value::callable(name);
    return value::undefined("'" + name + "' is undefined");
}

void interpreter::assign(const std::string& name, value v) {
    auto& vars = frames_.back().vars;
    for (auto& [k, old] : vars)
        if (k == name) {
            old = std::move(v);
            return;
        }
    vars.emplace_back(name, std::move(v));
}

void interpreter::bind_targets(const std::vector<std::string>& targets, const value& v) {
    if (targets.size() == 1) {
        assign(targets[0], v);
        return;
    }
    const auto items = iterate(v);
    if (items.size() != targets.size())
        fail("cannot unpack " + std::to_string(items.size()) + " values into " +
             std::to_string(targets.size()) + " names");
    for (std::size_t i = 0; i < targets.size(); ++i)
        assign(targets[i], items[i]);
}

text interpreter::capture(const body& b, int parent_frame) {
    frames_.push_back({{}, parent_frame});
    text out;
    out_.push_back(&out);
    exec(b);
    out_.pop_back();
    frames_.pop_back();
    return out;
}

interpreter::flow interpreter::exec(const body& b) {
    for (const auto& s : b) {
        const auto f = exec(s);
        if (f != flow::normal)
            return f;
    }
    return flow::normal;
}

interpreter::flow interpreter::exec(const stmt& s) {
    depth_guard g(*this);
    step(s.pos);
    switch (s.k) {
    case st::text:
        emit(text(s.text));
        return flow::normal;
    case st::output:
        emit(to_text(eval(*s.e)));
        return flow::normal;
    case st::if_:
        for (const auto& [cond, b] : s.branches)
            if (truthy(eval(*cond)))
                return exec(b);
        return exec(s.else_body);
    case st::for_:
        return exec_for(s);
    case st::set:
    case st::set_block:
        exec_set(s);
        return flow::normal;
    case st::macro: {
        value m;
        m.k = kind::macro;
        m.mac = s.macro.get();
        assign(s.macro->name, std::move(m));
        return flow::normal;
    }
    case st::call_block: {
        const auto& call = *s.e;
        auto callee = eval(*call.args[0]);
        if (callee.k != kind::macro)
            fail("{% call %} needs a macro, not a " + std::string(callee.type_name()));
        callers_.push_back({&s.statements, static_cast<int>(frames_.size()) - 1});
        const auto args = eval_args(call, 1);
        auto v = call_macro(*callee.mac, args, static_cast<int>(callers_.size()) - 1);
        callers_.pop_back();
        emit(v.str);
        return flow::normal;
    }
    case st::filter_block: {
        auto v = value::string(capture(s.statements, static_cast<int>(frames_.size()) - 1));
        emit(to_text(apply_filters(s.filters, std::move(v))));
        return flow::normal;
    }
    case st::generation:
        return exec(s.statements);
    case st::break_:
        return flow::break_;
    case st::continue_:
        return flow::continue_;
    }
    return flow::normal;
}

interpreter::flow interpreter::exec_for(const stmt& s) {
    const auto all = iterate(eval(*s.e));
    array items;
    const int outer = static_cast<int>(frames_.size()) - 1;
    if (s.filter) {
        for (const auto& item : all) {
            frames_.push_back({{}, outer});
            bind_targets(s.targets, item);
            const bool keep = truthy(eval(*s.filter));
            frames_.pop_back();
            if (keep)
                items.push_back(item);
        }
    } else
        items = all;
    count_iterations(items.size());
    const auto n = static_cast<std::int64_t>(items.size());
    for (std::int64_t i = 0; i < n; ++i) {
        object loop;
        loop.set("index", value::integer(i + 1));
        loop.set("index0", value::integer(i));
        loop.set("revindex", value::integer(n - i));
        loop.set("revindex0", value::integer(n - i - 1));
        loop.set("first", value::boolean(i == 0));
        loop.set("last", value::boolean(i == n - 1));
        loop.set("length", value::integer(n));
        loop.set("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)]
                                   : value::undefined("there is no previous item"));
        loop.set("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)]
                                       : value::undefined("there is no next item"));
        loop.set("depth", value::integer(1));
        loop.set("depth0", value::integer(0));
        frames_.push_back({{}, outer});
        assign("loop", value::dict(std::move(loop)));
        bind_targets(s.targets, items[static_cast<std::size_t>(i)]);
        const auto f = exec(s.statements);
        frames_.pop_back();
        if (f == flow::break_)
            break;
    }
    if (n == 0 && !s.else_body.empty()) {
        frames_.push_back({{}, outer});
        exec(s.else_body);
        frames_.pop_back();
    }
    return flow::normal;
}

void interpreter::exec_set(const stmt& s) {
    if (s.k == st::set_block) {
        auto v = value::string(capture(s.statements, static_cast<int>(frames_.size()) - 1));
        assign(s.targets[0], apply_filters(s.filters, std::move(v)));
        return;
    }
    auto v = eval(*s.e);
    if (s.target_attr.empty()) {
        bind_targets(s.targets, v);
        return;
    }
    const auto target = lookup(s.targets[0]);
    if (target.k != kind::ns)
        fail("cannot assign an attribute of '" + s.targets[0] +
             "': only a namespace() takes attributes");
    if (holds_namespace(v))
        fail("a namespace attribute cannot hold a namespace", failure::unsupported);
    target.ns->set(s.target_attr, std::move(v));
}

value interpreter::apply_filters(const std::vector<expr_ptr>& filters, value v) {
    for (const auto& f : filters)
        v = eval_filter(*f, std::move(v));
    return v;
}

value interpreter::call_macro(const macro_def& m, const call_args& args, int caller) {
    if (macro_depth_ >= lim_.max_macro_depth)
        fail("macro calls nest deeper than " + std::to_string(lim_.max_macro_depth),
             failure::limit);
    if (args.pos.size() > m.params.size())
        fail("macro '" + m.name + "' takes not more than " + std::to_string(m.params.size()) +
             " argument(s)");
    for (const auto& [k, v] : args.kw)
        if (std::find(m.params.begin(), m.params.end(), k) == m.params.end())
            fail("macro '" + m.name + "' takes no keyword argument '" + k + "'");
    ++macro_depth_;
    frames_.push_back({{}, 0});
    if (caller >= 0) {
        auto c = value::callable("caller");
        c.i = caller;
        assign("caller", std::move(c));
    }
    for (std::size_t p = 0; p < m.params.size(); ++p) {
        const value* given = args.get(p, m.params[p]);
        if (given)
            assign(m.params[p], *given);
        else if (m.defaults[p])
            assign(m.params[p], eval(*m.defaults[p]));
        else
            assign(m.params[p], value::undefined("parameter '" + m.params[p] + "' of macro '" +
                                                 m.name + "' was not given"));
    }
    text out;
    out_.push_back(&out);
    exec(m.statements);
    out_.pop_back();
    frames_.pop_back();
    --macro_depth_;
    return value::string(std::move(out));
}

value interpreter::call(const value& callee, const call_args& args) {
    switch (callee.k) {
    case kind::macro:
        return call_macro(*callee.mac, args, -1);
    case kind::callable:
        if (callee.self)
            return call_method(*this, *callee.self, callee.name, args);
        if (callee.name == "caller") {
            const auto& c = callers_.at(static_cast<std::size_t>(callee.i));
            return value::string(capture(*c.statements, c.frame));
        }
        return call_global(*this, callee.name, args);
    case kind::undefined:
        fail_undefined(callee);
    default:
        fail("'" + std::string(callee.type_name()) + "' object is not callable");
    }
}

} // namespace bitnet::model::jinja
