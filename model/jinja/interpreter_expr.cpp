// Expressions: lookups, operators, calls, filters and tests, with Python's semantics.
#include "model/jinja/interpreter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bitnet::model::jinja {

namespace {

/// Python's slice.indices(n) walked: the indices a[start:stop:step] visits.
std::vector<std::int64_t> slice_indices(std::int64_t n, const value& start, const value& stop,
                                        std::int64_t step) {
    auto bound = [&](const value& v, std::int64_t dflt, bool is_start) {
        if (v.is_none() || v.is_undefined())
            return dflt;
        auto x = v.as_int();
        if (x < 0)
            x += n;
        if (step > 0)
            return std::clamp<std::int64_t>(x, 0, n);
        return std::clamp<std::int64_t>(x, -1, n - 1) + (is_start ? 0 : 0);
    };
    const auto lo = bound(start, step > 0 ? 0 : n - 1, true);
    const auto hi = bound(stop, step > 0 ? n : -1, false);
    std::vector<std::int64_t> out;
    if (step > 0)
        for (auto i = lo; i < hi; i += step)
            out.push_back(i);
    else
        for (auto i = lo; i > hi; i += step)
            out.push_back(i);
    return out;
}

} // namespace

value interpreter::eval(const expr& e) {
    depth_guard g(*this);
    step(e.pos);
    auto v = eval_node(e);
    if (v.depth > lim_.max_value_depth) {
        pos_ = e.pos;
        fail("a value nests deeper than " + std::to_string(lim_.max_value_depth) + " levels",
             failure::limit);
    }
    return v;
}

value interpreter::eval_node(const expr& e) {
    switch (e.k) {
    case ex::literal:
        return e.lit;
    case ex::name:
        return lookup(e.name);
    case ex::list: {
        array items;
        for (const auto& a : e.args)
            items.push_back(eval(*a));
        check_size(items.size());
        return e.name == "tuple" ? value::tuple_of(std::move(items))
                                 : value::list(std::move(items));
    }
    case ex::dict: {
        object o;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
            auto k = eval(*e.args[i]);
            if (!k.is_string())
                fail("dict keys other than strings are not supported (found " +
                         std::string(k.type_name()) + ")",
                     failure::unsupported);
            o.set(k.str.s, eval(*e.args[i + 1]));
        }
        return value::dict(std::move(o));
    }
    case ex::attr:
        return get_attr(eval(*e.args[0]), e.name);
    case ex::item: {
        auto obj = eval(*e.args[0]);
        return get_item(obj, eval(*e.args[1]));
    }
    case ex::slice: {
        auto obj = eval(*e.args[0]);
        auto part = [&](std::size_t i) { return e.args[i] ? eval(*e.args[i]) : value::none(); };
        auto a = part(1), b = part(2), c = part(3);
        return slice(obj, a, b, c);
    }
    case ex::call:
        return eval_call(e);
    case ex::filter:
        return eval_filter(e, eval(*e.args[0]));
    case ex::test: {
        auto input = eval(*e.args[0]);
        const auto args = eval_args(e, 1);
        pos_ = e.pos;
        return value::boolean(apply_test(*this, e.name, input, args) != e.negated);
    }
    case ex::not_:
        return value::boolean(!truthy(eval(*e.args[0])));
    case ex::neg:
    case ex::pos: {
        auto v = eval(*e.args[0]);
        pos_ = e.pos;
        if (v.is_undefined())
            fail_undefined(v);
        if (!v.is_numeric())
            fail("bad operand type for unary " + std::string(e.k == ex::neg ? "-" : "+") + ": '" +
                 v.type_name() + "'");
        if (e.k == ex::pos)
            return v.k == kind::boolean ? value::integer(v.as_int()) : v;
        if (v.k == kind::number)
            return value::number(-v.d);
        return arithmetic(*this, "-", value::integer(0), v);
    }
    case ex::binary: {
        auto a = eval(*e.args[0]);
        auto b = eval(*e.args[1]);
        pos_ = e.pos;
        return binary(e.name, a, b);
    }
    case ex::and_: {
        auto a = eval(*e.args[0]);
        return truthy(a) ? eval(*e.args[1]) : a;
    }
    case ex::or_: {
        auto a = eval(*e.args[0]);
        return truthy(a) ? a : eval(*e.args[1]);
    }
    case ex::compare:
        return eval_compare(e);
    case ex::cond:
        if (truthy(eval(*e.args[0])))
            return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2])
                         : value::undefined("the conditional expression has no else branch");
    }
    return value::undefined();
}

call_args interpreter::eval_args(const expr& e, std::size_t skip) {
    call_args out;
    for (std::size_t i = skip; i < e.args.size(); ++i)
        out.pos.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs)
        out.kw.emplace_back(k, eval(*v));
    return out;
}

value interpreter::eval_call(const expr& e) {
    const auto& callee = *e.args[0];
    value fn;
    if (callee.k == ex::attr) {
        // x.method(...): Jinja's getattr finds the method before a dict key of that name.
        auto self = eval(*callee.args[0]);
        pos_ = callee.pos;
        fn = get_attr(self, callee.name);
    } else
        fn = eval(callee);
    const auto args = eval_args(e, 1);
    pos_ = e.pos;
    return call(fn, args);
}

value interpreter::eval_filter(const expr& e, value input) {
    const auto args = eval_args(e, 1);
    pos_ = e.pos;
    return apply_filter(*this, e.name, input, args);
}

value interpreter::eval_compare(const expr& e) {
    auto left = eval(*e.args[0]);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
        auto right = eval(*e.args[i + 1]);
        pos_ = e.pos;
        const auto& op = e.ops[i];
        bool ok;
        if (op == "==")
            ok = equal(left, right);
        else if (op == "!=")
            ok = !equal(left, right);
        else if (op == "<")
            ok = less_than(*this, left, right);
        else if (op == ">")
            ok = less_than(*this, right, left);
        else if (op == "<=")
            ok = !less_than(*this, right, left);
        else if (op == ">=")
            ok = !less_than(*this, left, right);
        else if (op == "in")
            ok = contains(*this, right, left);
        else
            ok = !contains(*this, right, left);
        if (!ok)
            return value::boolean(false);
        left = std::move(right);
    }
    return value::boolean(true);
}

value interpreter::binary(const std::string& op, const value& a, const value& b) {
    if (op == "~") {
        auto t = to_text(a);
        t.append(to_text(b));
        check_size(t.s.size());
        return value::string(std::move(t));
    }
    if (a.is_undefined())
        fail_undefined(a);
    if (b.is_undefined())
        fail_undefined(b);
    if (op == "+" && a.is_string() && b.is_string()) {
        check_size(a.str.s.size() + b.str.s.size());
        auto t = a.str;
        t.append(b.str);
        return value::string(std::move(t));
    }
    if (op == "+" && a.k == kind::list && b.k == kind::list) {
        check_size(a.arr->size() + b.arr->size());
        array items = *a.arr;
        items.insert(items.end(), b.arr->begin(), b.arr->end());
        return value::list(std::move(items), a.input || b.input);
    }
    if (op == "*" && (a.is_string() || a.k == kind::list) != (b.is_string() || b.k == kind::list)) {
        const auto& seq = a.is_int() ? b : a;
        const auto& times = a.is_int() ? a : b;
        if (!times.is_int())
            fail("can't multiply sequence by non-int of type '" + std::string(times.type_name()) +
                 "'");
        const auto n = std::max<std::int64_t>(0, times.as_int());
        const auto unit = seq.is_string() ? seq.str.s.size() : seq.arr->size();
        if (unit != 0 && static_cast<std::uint64_t>(n) > lim_.max_output_bytes / unit)
            check_size(lim_.max_output_bytes + 1);
        if (seq.is_string()) {
            text t;
            for (std::int64_t i = 0; i < n; ++i)
                t.append(seq.str);
            return value::string(std::move(t));
        }
        array items;
        for (std::int64_t i = 0; i < n; ++i)
            items.insert(items.end(), seq.arr->begin(), seq.arr->end());
        return value::list(std::move(items), seq.input);
    }
    if (op == "%" && a.is_string())
        fail("printf-style formatting of strings ('...' % x) is not supported",
             failure::unsupported);
    return arithmetic(*this, op, a, b);
}

value interpreter::slice(const value& obj, const value& start, const value& stop,
                         const value& stride) const {
    if (obj.is_undefined())
        fail_undefined(obj);
    for (const auto* p : {&start, &stop, &stride})
        if (!p->is_none() && !p->is_int())
            fail("slice indices must be integers or None");
    const std::int64_t step = stride.is_none() ? 1 : stride.as_int();
    if (step == 0)
        fail("slice step cannot be zero");
    if (obj.is_string()) {
        const auto& s = obj.str;
        const auto n = static_cast<std::int64_t>(utf8_length(s.s));
        text out;
        for (auto i : slice_indices(n, start, stop, step)) {
            const auto b = utf8_offset(s.s, static_cast<std::size_t>(i));
            out.append(s.substr(b, utf8_char_len(s.s, b)));
        }
        return value::string(std::move(out));
    }
    if (obj.k == kind::list) {
        array out;
        for (auto i : slice_indices(static_cast<std::int64_t>(obj.arr->size()), start, stop, step))
            out.push_back((*obj.arr)[static_cast<std::size_t>(i)]);
        return value::list(std::move(out), obj.input);
    }
    fail("'" + std::string(obj.type_name()) + "' object is not subscriptable");
}

value interpreter::get_attr(const value& obj, const std::string& name) const {
    switch (obj.k) {
    case kind::undefined:
        fail_undefined(obj);
    case kind::string:
    case kind::list:
        if (is_method_of(obj.k, name))
            return value::callable(name, std::make_shared<const value>(obj));
        break;
    case kind::dict:
        if (is_method_of(obj.k, name))
            return value::callable(name, std::make_shared<const value>(obj));
        if (const auto* v = obj.obj->find(name))
            return *v;
        break;
    case kind::ns:
        if (const auto* v = static_cast<const object&>(*obj.ns).find(name))
            return *v;
        break;
    default:
        break;
    }
    return value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" +
                            name + "'");
}

value interpreter::get_item(const value& obj, const value& key) const {
    if (obj.is_undefined())
        fail_undefined(obj);
    if (obj.k == kind::dict && key.is_string()) {
        if (const auto* v = obj.obj->find(key.str.s))
            return *v;
        return get_attr(obj, key.str.s);
    }
    if (obj.k == kind::ns && key.is_string())
        return get_attr(obj, key.str.s);
    if ((obj.k == kind::list || obj.is_string()) && key.is_int()) {
        const auto n =
            static_cast<std::int64_t>(obj.is_string() ? utf8_length(obj.str.s) : obj.arr->size());
        auto i = key.as_int();
        if (i < 0)
            i += n;
        if (i < 0 || i >= n)
            return value::undefined("index " + std::to_string(key.as_int()) + " is out of range");
        if (obj.k == kind::list)
            return (*obj.arr)[static_cast<std::size_t>(i)];
        const auto b = utf8_offset(obj.str.s, static_cast<std::size_t>(i));
        return value::string(obj.str.substr(b, utf8_char_len(obj.str.s, b)));
    }
    if (key.is_string())
        return get_attr(obj, key.str.s);
    return value::undefined("'" + std::string(obj.type_name()) + " object' has no item " +
                            repr(key));
}

array interpreter::iterate(const value& v) const {
    switch (v.k) {
    case kind::undefined:
        return {};
    case kind::list:
        return *v.arr;
    case kind::dict: {
        array keys;
        for (const auto& [k, x] : v.obj->items)
            keys.push_back(value::string(k, v.obj->input_keys));
        return keys;
    }
    case kind::string: {
        array chars;
        for (std::size_t i = 0; i < v.str.s.size();) {
            const auto len = utf8_char_len(v.str.s, i);
            chars.push_back(value::string(v.str.substr(i, len)));
            i += len;
        }
        return chars;
    }
    default:
        fail("'" + std::string(v.type_name()) + "' object is not iterable");
    }
}

value arithmetic(const interpreter& in, const std::string& op, const value& a, const value& b) {
    if (!a.is_numeric() || !b.is_numeric())
        in.fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                b.type_name() + "'");
    const bool ints = a.is_int() && b.is_int();
    if (ints && op != "/" && op != "**") {
        const auto x = a.as_int(), y = b.as_int();
        std::int64_t r = 0;
        bool overflow = false;
        if (op == "+")
            overflow = __builtin_add_overflow(x, y, &r);
        else if (op == "-")
            overflow = __builtin_sub_overflow(x, y, &r);
        else if (op == "*")
            overflow = __builtin_mul_overflow(x, y, &r);
        else {
            if (y == 0)
                in.fail("integer division or modulo by zero");
            if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
                overflow = true;
            else {
                std::int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { // Python floors
                    --q;
                    m += y;
                }
                r = op == "//" ? q : m;
            }
        }
        if (overflow)
            in.fail("integer overflow in " + op + " (integers are 64-bit here)", failure::limit);
        return value::integer(r);
    }
    if (ints && op == "**" && b.as_int() >= 0) {
        std::int64_t r = 1, base = a.as_int();
        for (auto e = b.as_int(); e > 0; --e)
            if (__builtin_mul_overflow(r, base, &r))
                in.fail("integer overflow in ** (integers are 64-bit here)", failure::limit);
        return value::integer(r);
    }
    const double x = a.as_double(), y = b.as_double();
    if ((op == "/" || op == "//" || op == "%") && y == 0)
        in.fail("float division by zero");
    if (op == "+")
        return value::number(x + y);
    if (op == "-")
        return value::number(x - y);
    if (op == "*")
        return value::number(x * y);
    if (op == "/")
        return value::number(x / y);
    if (op == "//")
        return value::number(std::floor(x / y));
    if (op == "%") {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0)))
            m += y;
        return value::number(m);
    }
    return value::number(std::pow(x, y));
}

bool less_than(const interpreter& in, const value& a, const value& b) {
    if (a.is_undefined())
        in.fail_undefined(a);
    if (b.is_undefined())
        in.fail_undefined(b);
    if (a.is_numeric() && b.is_numeric())
        return a.k == kind::number || b.k == kind::number ? a.as_double() < b.as_double()
                                                          : a.as_int() < b.as_int();
    if (a.is_string() && b.is_string())
        return a.str.s < b.str.s;
    if (a.k == kind::list && b.k == kind::list) {
        const auto n = std::min(a.arr->size(), b.arr->size());
        for (std::size_t i = 0; i < n; ++i)
            if (!equal((*a.arr)[i], (*b.arr)[i]))
                return less_than(in, (*a.arr)[i], (*b.arr)[i]);
        return a.arr->size() < b.arr->size();
    }
    in.fail("'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" +
            b.type_name() + "'");
}

bool contains(const interpreter& in, const value& haystack, const value& needle) {
    switch (haystack.k) {
    case kind::undefined:
        return false;
    case kind::string:
        if (!needle.is_string())
            in.fail("'in <string>' requires string as left operand, not " +
                    std::string(needle.type_name()));
        return haystack.str.s.find(needle.str.s) != std::string::npos;
    case kind::list:
        for (const auto& x : *haystack.arr)
            if (equal(x, needle))
                return true;
        return false;
    case kind::dict:
        return needle.is_string() && haystack.obj->find(needle.str.s) != nullptr;
    case kind::ns:
        return needle.is_string() && static_cast<const object&>(*haystack.ns).find(needle.str.s);
    default:
        in.fail("argument of type '" + std::string(haystack.type_name()) + "' is not iterable");
    }
}

} // namespace bitnet::model::jinja
