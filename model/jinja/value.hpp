// The values a chat template computes with: Python's None, bool, int, float, str, list and dict
// (as JSON has them), plus Jinja's Undefined, namespaces, macros and bound methods. Strings carry
// the provenance of their bytes (which came from the render's input data, e.g. message contents)
// so a renderer can hand the tokenizer the template's own text apart from client text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model::jinja {

/// A UTF-8 string and which of its bytes came from input data (runs, sorted, disjoint, never
/// adjacent). Template literals have no runs; a message's content is one run over all of it.
struct text {
    std::string s;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> input; ///< [begin, end) byte runs

    text() = default;
    explicit text(std::string str, bool from_input = false);

    void append(const text& o);
    void append(std::string_view template_text);
    /// Bytes [pos, pos + n) with their provenance.
    [[nodiscard]] text substr(std::size_t pos, std::size_t n) const;
    [[nodiscard]] bool any_input() const noexcept { return !input.empty(); }
    /// Marks every byte as input when `on` (a transformation of input text is input).
    void mark_all_input(bool on);
};

struct value;
using array = std::vector<value>;

/// A dict: insertion-ordered (Python 3.7+), string keys only.
struct object {
    std::vector<std::pair<std::string, value>> items;
    bool input_keys = false; ///< keys came from input data (their strings are input text)

    [[nodiscard]] const value* find(std::string_view key) const noexcept;
    value* find(std::string_view key) noexcept;
    void set(std::string key, value v);
};

struct macro_def; // ast.hpp

enum class kind : std::uint8_t {
    undefined,
    none,
    boolean,
    integer,
    number, ///< a float
    string,
    list,     ///< an array
    dict,     ///< an object
    ns,       ///< a namespace(): the one mutable value
    macro,    ///< a template macro
    callable, ///< a global function or a bound method (name, and `self` for a method)
};

/// One value. Arrays and dicts are immutable once built (the sandbox Transformers uses forbids
/// mutating them), so copies share them; a namespace is shared and mutable, as in Jinja.
struct value {
    kind k = kind::undefined;
    bool b = false;
    std::int64_t i = 0;
    double d = 0;
    text str;
    std::shared_ptr<const array> arr;
    std::shared_ptr<const object> obj;
    std::shared_ptr<object> ns;
    const macro_def* mac = nullptr;
    std::shared_ptr<const value> self; ///< callable: the receiver of a bound method
    std::string name;        ///< undefined: what was looked up (for messages); callable: its name
    bool input = false;      ///< array/object: built from input data
    bool tuple = false;      ///< array: a Python tuple (prints as (a, b); never equals a list)
    std::uint32_t depth = 0; ///< lists, dicts and namespaces nested in this value, itself included

    static value undefined(std::string what = {});
    static value none();
    static value boolean(bool v);
    static value integer(std::int64_t v);
    static value number(double v);
    static value string(text t);
    static value string(std::string s, bool from_input = false);
    static value list(array a, bool from_input = false);
    static value tuple_of(array a, bool from_input = false);
    static value dict(object o);
    static value callable(std::string fn, std::shared_ptr<const value> receiver = nullptr);

    [[nodiscard]] bool is_undefined() const noexcept { return k == kind::undefined; }
    [[nodiscard]] bool is_none() const noexcept { return k == kind::none; }
    [[nodiscard]] bool is_string() const noexcept { return k == kind::string; }
    /// Python's int, bool included.
    [[nodiscard]] bool is_int() const noexcept { return k == kind::integer || k == kind::boolean; }
    [[nodiscard]] bool is_numeric() const noexcept { return is_int() || k == kind::number; }
    [[nodiscard]] std::int64_t as_int() const noexcept { return k == kind::boolean ? b : i; }
    [[nodiscard]] double as_double() const noexcept {
        return k == kind::number ? d : static_cast<double>(as_int());
    }
    /// Python's type name, for messages ("str", "list", "NoneType").
    [[nodiscard]] const char* type_name() const noexcept;
};

/// Python truthiness (Undefined is false).
[[nodiscard]] bool truthy(const value& v);
/// Python `==` (1 == 1.0 == True; lists and dicts by content); Undefined equals only Undefined.
[[nodiscard]] bool equal(const value& a, const value& b, std::uint32_t depth = 0);
/// Whether a namespace is inside `v` (v itself included). A namespace may not hold one: a
/// cycle of shared namespaces would never be freed.
[[nodiscard]] bool holds_namespace(const value& v);
/// Python's repr of a float: the shortest text that reads back ("0.1", "1e+16", "nan").
[[nodiscard]] std::string float_repr(double d);
/// Python's repr of a str: quoted, with Python's escapes.
[[nodiscard]] std::string string_repr(std::string_view s);

// UTF-8 as Python sees a str: code points.
/// Code points in `s` (valid UTF-8 assumed: input and templates are validated).
[[nodiscard]] std::size_t utf8_length(std::string_view s) noexcept;
/// Byte offset of code point `index` (clamped to the end).
[[nodiscard]] std::size_t utf8_offset(std::string_view s, std::size_t index) noexcept;
/// Bytes of the code point starting at `s[pos]`.
[[nodiscard]] std::size_t utf8_char_len(std::string_view s, std::size_t pos) noexcept;
/// Whether `s` is well-formed UTF-8; `bad_at` gets the first bad byte's offset.
[[nodiscard]] bool utf8_valid(std::string_view s, std::size_t* bad_at = nullptr) noexcept;

} // namespace bitnet::model::jinja
