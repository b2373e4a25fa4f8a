// The Jinja interpreter's pieces (model/jinja/): whitespace control, loops, scoping, macros,
// limits and the errors that name unsupported constructs. Expected strings are what Jinja2 3.1
// renders in Transformers' environment (checked with python3-jinja2 when written).
#include "model/jinja/template.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet;
namespace jj = bitnet::model::jinja;

namespace {

constexpr std::time_t noon_26_jul_2024 = 1721995200;

/// Renders `src` with a user message in `messages`; "ERR <errc>: <message>" on failure.
std::string render(std::string_view src, const jj::limits& lim = {}) {
    auto t = jj::compiled_template::compile(src, lim);
    if (!t)
        return "ERR " + t.error().to_string();
    auto vars = jj::parse_json(R"({"messages":[{"role":"user","content":"Hi <|eot_id|>"}],
                                   "bos_token":"<s>"})",
                               lim);
    REQUIRE(vars);
    auto out = t->render(*vars->obj, noon_26_jul_2024);
    return out ? out->s : "ERR " + out.error().to_string();
}

jj::text render_text(std::string_view src) {
    auto t = jj::compiled_template::compile(src);
    REQUIRE(t);
    auto vars =
        jj::parse_json(R"({"messages":[{"role":"user","content":"Hi <|eot_id|>"}]})", jj::limits{});
    REQUIRE(vars);
    auto out = t->render(*vars->obj, noon_26_jul_2024);
    REQUIRE(out);
    return *out;
}

} // namespace

TEST_CASE(
    "jinja: trim_blocks, lstrip_blocks and - / + whitespace control as Transformers sets them") {
    CHECK(render("  {% if true %}\n    yes\n  {% endif %}\n  after\n") == "    yes\n  after");
    CHECK(render("a\n{%- if true -%}\n  b  \n{%- endif -%}\n c") == "abc");
    CHECK(render("  {%+ if true %}x{% endif %}") == "  x");
    CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");
    CHECK(render("{# c #}\nx\n  {# d #}\ny\n\n") == "x\ny\n");
    CHECK(render("{{ 'a' }}\n{{ 'b' }}") == "a\nb"); // no trim after }}
    CHECK(render("x\r\ny\r") == "x\ny");             // newlines normalised, one trailing dropped
    CHECK(render("{% raw %}{{ x }}{% endraw %}") == "{{ x }}");
}

TEST_CASE("jinja: loop variables, loop else, filters on loops, break and continue") {
    CHECK(render("{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                 "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
                 "{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }};{% endfor %}") ==
          "1021TrueFalse2-b;2110FalseTrue2a-;");
    CHECK(render("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
    CHECK(
        render("{% for x in [1,2,3] if x != 2 %}{{ loop.index }}/{{ loop.length }};{% endfor %}") ==
        "1/2;2/2;");
    CHECK(render("{% for i in [1,2,3,4] %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}"
                 "{% if i == 3 %}{% break %}{% endif %}{% endfor %}") == "13");
    CHECK(render("{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}") ==
          "a=1;b=2;");
}

TEST_CASE("jinja: a set inside a loop stays in its iteration, a namespace carries across") {
    CHECK(render("{% set x = 1 %}{% for i in [1,2,3] %}{{ x }}{% set x = x + 1 %}{% endfor %}|{{ x "
                 "}}") == "111|1");
    CHECK(render("{% set ns = namespace(n=0) %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}"
                 "{% endfor %}{{ ns.n }}") == "6");
    CHECK(render("{% if true %}{% set y = 'kept' %}{% endif %}{{ y }}") == "kept");
    CHECK(render("{% set messages = messages[1:] %}{{ messages|length }}") == "0");
}

TEST_CASE("jinja: macros with defaults, keyword arguments and call blocks") {
    CHECK(
        render("{% macro m(a, b='B') %}<{{ a }}{{ b }}{{ caller() if caller is defined else '' }}>"
               "{% endmacro %}{{ m(1) }}{% call m(2, b='x') %}in{% endcall %}") == "<1B><2xin>");
    CHECK(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ "
                 "f(3) }}") == "321");
    CHECK(
        render("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").starts_with("ERR invalid_argument"));
}

TEST_CASE("jinja: Python values, Undefined and the globals Transformers adds") {
    CHECK(render("{{ [1, 'a', none, true, 1.5, {'k': (1,)}] }}") ==
          "[1, 'a', None, True, 1.5, {'k': (1,)}]");
    CHECK(render("{{ 1e20 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ -7 // 2 }} {{ -7 % 3 }}") ==
          "1e+20 0.30000000000000004 2.5 -4 2");
    CHECK(render("{{ missing }}|{{ missing is defined }}|{{ missing|default('d') }}") ==
          "|False|d");
    CHECK(render("{{ missing.attr }}").starts_with("ERR invalid_argument"));
    CHECK(render("{{ none.attr is defined }}") == "False");
    CHECK(render("{{ strftime_now('%d %b %Y') }}") == "26 Jul 2024");
    const auto raised = render("{{ raise_exception('roles must alternate') }}");
    CHECK(raised == "ERR invalid_argument: raise_exception: roles must alternate");
    CHECK(render("{{ {'a': 'é', 'b': [1, 2]}|tojson(indent=2) }}") ==
          "{\n  \"a\": \"é\",\n  \"b\": [\n    1,\n    2\n  ]\n}");
    CHECK(render(
              "{{ 'x'.upper() }}{{ ' a b '.split() }}{{ 'a,b'.split(',', 1) }}{{ 'abc'[::-1] }}") ==
          "X['a', 'b']['a', 'b']cba");
    CHECK(render("{{ [1,2].append(3) }}").find("unsafe") != std::string::npos);
}

TEST_CASE(
    "jinja: constructs it does not implement fail at compile time, named, with the position") {
    struct row {
        const char* src;
        const char* names;
    };
    for (const auto& [src, names] : {
             row{"{% include 'x.jinja' %}", "{% include %}"},
             row{"{% extends 'base' %}", "{% extends %}"},
             row{"{{ x|wordwrap }}", "filter 'wordwrap'"},
             row{"{{ x is prime }}", "test 'prime'"},
             row{"{{ '{}'.format(1) }}", ".format()"},
             row{"{{ f(*args) }}", "*args"},
             row{"{% for x in y recursive %}{% endfor %}", "recursive"},
             row{"\n  {{ x|wordwrap }}", "line 2, column 7"},
         }) {
        const auto out = render(src);
        INFO(src << " -> " << out);
        CHECK(out.starts_with("ERR unsupported"));
        CHECK(out.find(names) != std::string::npos);
    }
    const auto bad = render("{% if x %}no end");
    CHECK(bad.starts_with("ERR bad_format"));
    CHECK(bad.find("line 1") != std::string::npos);
    CHECK(render("{{ 'unclosed }}").starts_with("ERR bad_format"));
    CHECK(render("{% endfor %}").starts_with("ERR bad_format"));
}

TEST_CASE("jinja: every limit is a clear error, never a crash") {
    jj::limits lim;
    lim.max_nesting = 8;
    std::string deep;
    for (int i = 0; i < 20; ++i)
        deep += "{% if true %}";
    CHECK(render(deep, lim).find("nested deeper than 8") != std::string::npos);
    CHECK(render("{{ " + std::string(100, '(') + "1" + std::string(100, ')') + " }}", lim)
              .find("nested deeper than 8") != std::string::npos);
    lim = {};
    lim.max_loop_iterations = 1000;
    CHECK(render("{% for i in range(10) %}{% for j in range(200) %}{% endfor %}{% endfor %}", lim)
              .find("more than 1000 iterations") != std::string::npos);
    CHECK(render("{{ range(1000000000)|length }}", lim).find("iterations") != std::string::npos);
    lim = {};
    lim.max_output_bytes = 1000;
    CHECK(render("{{ 'x' * 5000 }}", lim).find("grew past 1000 bytes") != std::string::npos);
    CHECK(render("{% for i in range(100) %}0123456789abcdef{% endfor %}", lim).find("grew past") !=
          std::string::npos);
    lim = {};
    lim.max_macro_depth = 16;
    CHECK(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", lim)
              .find("macro calls nest deeper than 16") != std::string::npos);
    lim = {};
    lim.max_steps = 10000;
    CHECK(render("{% macro f(n) %}{% if n < 30 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% "
                 "endmacro %}{{ f(0) }}",
                 lim)
              .find("steps") != std::string::npos);
    lim = {};
    lim.max_template_bytes = 10;
    CHECK(render("{{ 'more than ten bytes' }}", lim).find("more than the limit") !=
          std::string::npos);
    CHECK(render("{% set ns = namespace(x=1) %}{% for i in range(400) %}{% set ns.x = [ns.x] %}"
                 "{% endfor %}{{ ns.x }}")
              .find("nests deeper than 128") != std::string::npos);
    CHECK(render("{% set ns = namespace() %}{% set ns.me = ns %}").starts_with("ERR unsupported"));
    lim = {};
    lim.max_input_depth = 4;
    CHECK_FALSE(jj::parse_json("[[[[[[1]]]]]]", lim));
    CHECK(jj::parse_json("[[1]]", lim));
    CHECK(render("{{ 9223372036854775807 + 1 }}").find("overflow") != std::string::npos);
}

TEST_CASE("jinja: rendered text knows which bytes came from the input") {
    const auto t = render_text("<m>{{ messages[0].content|trim }}</m>{{ '<|eot_id|>' }}");
    CHECK(t.s == "<m>Hi <|eot_id|></m><|eot_id|>");
    REQUIRE(t.input.size() == 1);
    CHECK(t.input[0].first == 3);
    CHECK(t.input[0].second == 3 + 13);
    const auto joined = render_text("{{ messages[0].role ~ ': ' ~ messages[0].content }}");
    REQUIRE(joined.input.size() == 2); // "user" and the content, not the ": " between
    CHECK(joined.s.substr(joined.input[1].first) == "Hi <|eot_id|>");
    const auto as_json = render_text("{{ messages|tojson }}");
    CHECK(as_json.input.size() == 1); // JSON of input is input
}
