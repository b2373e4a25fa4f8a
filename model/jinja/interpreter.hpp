// Renders a parsed template with Jinja2's semantics (scoping of loops and macros, Undefined,
// Python's operators). One interpreter renders once, on the caller's thread; it throws
// template_error, which template.cpp turns into a result. Every recursion (statements,
// expressions, macro calls) passes a depth guard first (limits::max_eval_depth,
// max_macro_depth), and steps, loop iterations and output bytes are counted.
#pragma once

#include "model/jinja/ast.hpp"
#include "model/jinja/builtins.hpp"
#include "model/jinja/lexer.hpp"
#include "model/jinja/limits.hpp"

#include <ctime>
#include <string>
#include <vector>

namespace bitnet::model::jinja {

class interpreter {
public:
    /// `now`: the time strftime_now() formats (seconds since the epoch, local time).
    interpreter(const limits& lim, std::time_t now)
        : lim_(lim)
        , now_(now) {}

    /// Renders `b` with `vars` as the template's variables.
    [[nodiscard]] text render(const body& b, object vars);

    // For the builtins.
    [[noreturn]] void fail(const std::string& what, failure why = failure::render) const;
    /// Fails with the message of an Undefined value that was used.
    [[noreturn]] void fail_undefined(const value& v) const;
    [[nodiscard]] const limits& lim() const noexcept { return lim_; }
    [[nodiscard]] std::time_t now() const noexcept { return now_; }
    /// Counts loop iterations (or range() items) against the limit.
    void count_iterations(std::uint64_t n);
    /// Fails when a string or list of `n` bytes/items would pass max_output_bytes.
    void check_size(std::size_t n) const;
    /// Calls a macro, global function or bound method.
    [[nodiscard]] value call(const value& callee, const call_args& args);
    /// Attribute lookup as Jinja's environment.getattr (attribute, then item).
    [[nodiscard]] value get_attr(const value& obj, const std::string& name) const;
    /// Item lookup as Jinja's environment.getitem (item, then attribute).
    [[nodiscard]] value get_item(const value& obj, const value& key) const;
    /// The elements a for loop over `v` visits (dict keys, string characters).
    [[nodiscard]] array iterate(const value& v) const;

private:
    enum class flow { normal, break_, continue_ };
    struct frame {
        std::vector<std::pair<std::string, value>> vars;
        int parent = -1; ///< the frame whose variables this one sees next; -1: none
    };
    struct caller_block {
        const body* statements;
        int frame;
    };
    struct depth_guard {
        interpreter& in;
        explicit depth_guard(interpreter& owner);
        ~depth_guard() { --in.depth_; }
        depth_guard(const depth_guard&) = delete;
        depth_guard& operator=(const depth_guard&) = delete;
    };

    const limits& lim_;
    std::time_t now_;
    std::vector<frame> frames_;
    std::vector<text*> out_;
    std::vector<caller_block> callers_;
    std::size_t pos_ = 0;
    std::uint32_t depth_ = 0;
    std::uint32_t macro_depth_ = 0;
    std::uint64_t steps_ = 0;
    std::uint64_t iterations_ = 0;

    void step(std::size_t at);
    void emit(const text& t);
    [[nodiscard]] value lookup(const std::string& name) const;
    void assign(const std::string& name, value v);
    void bind_targets(const std::vector<std::string>& targets, const value& v);
    [[nodiscard]] text capture(const body& b, int parent_frame);

    flow exec(const body& b);
    flow exec(const stmt& s);
    flow exec_for(const stmt& s);
    void exec_set(const stmt& s);
    [[nodiscard]] value apply_filters(const std::vector<expr_ptr>& filters, value v);

    [[nodiscard]] value eval(const expr& e);
    [[nodiscard]] value eval_node(const expr& e);
    [[nodiscard]] value eval_call(const expr& e);
    [[nodiscard]] value eval_filter(const expr& e, value input);
    [[nodiscard]] call_args eval_args(const expr& e, std::size_t skip);
    [[nodiscard]] value eval_compare(const expr& e);
    [[nodiscard]] value binary(const std::string& op, const value& a, const value& b);
    [[nodiscard]] value slice(const value& obj, const value& start, const value& stop,
                              const value& stride) const;
    [[nodiscard]] value call_macro(const macro_def& m, const call_args& args, int caller);
};

/// Python's binary arithmetic on two numbers (+ - * / // % **), with overflow checks.
[[nodiscard]] value arithmetic(const interpreter& in, const std::string& op, const value& a,
                               const value& b);
/// Python's `a < b` (and <=, >, >=) for numbers, strings and lists.
[[nodiscard]] bool less_than(const interpreter& in, const value& a, const value& b);
/// Python's `needle in haystack`.
[[nodiscard]] bool contains(const interpreter& in, const value& haystack, const value& needle);

} // namespace bitnet::model::jinja
