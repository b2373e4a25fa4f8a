// Real chat templates (tests/data/chat_templates/) rendered by our chat formatter must equal,
// byte for byte, what Debian's python3-jinja2 renders the way Transformers does
// (tests/model/render_chat_template.py), for every template and message list in cases.json,
// with and without the generation prompt; where Jinja2 fails (a template's raise_exception, an
// empty message list), ours fails too.
#include "model/jinja/builtins.hpp"
#include "model/jinja/template.hpp"
#include "model/tokenizer/chat_formatter.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

using namespace bitnet;
using namespace bitnet::model;
namespace jj = bitnet::model::jinja;

namespace {

std::string read_text(const std::string& path) {
    const auto bytes = test::read_file(path);
    return {bytes.begin(), bytes.end()};
}

const jj::value& field(const jj::value& obj, std::string_view key) {
    static const jj::value none = jj::value::none();
    const auto* v = obj.obj->find(key);
    return v ? *v : none;
}

std::string compact_json(const jj::value& v) {
    static const std::string item = ",", key = ":";
    return jj::to_json(v, -1, false, &item, &key);
}

/// A case's messages as the server hands them to the formatter: strings viewed in `store`.
std::vector<chat_turn> turns_of(const jj::value& messages, std::vector<std::string>& store) {
    store.reserve(1024);
    auto keep = [&](const jj::value& v) -> std::string_view {
        if (!v.is_string())
            return {};
        store.push_back(v.str.s);
        return store.back();
    };
    std::vector<chat_turn> turns;
    for (const auto& m : *messages.arr) {
        chat_turn t{keep(field(m, "role")), keep(field(m, "content"))};
        t.name = keep(field(m, "name"));
        t.tool_call_id = keep(field(m, "tool_call_id"));
        const auto& calls = field(m, "tool_calls");
        if (calls.k == jj::kind::list)
            for (const auto& c : *calls.arr) {
                const auto& fn = field(c, "function");
                const auto& args = field(fn, "arguments");
                store.push_back(args.is_string() ? args.str.s : compact_json(args));
                const std::string_view args_text = store.back();
                t.calls.push_back({keep(field(fn, "name")), args_text, keep(field(c, "id"))});
            }
        turns.push_back(std::move(t));
    }
    return turns;
}

/// What python3-jinja2 renders for every template, case and generation-prompt choice.
jj::value reference_renderings(const std::string& cases_path) {
    test::scratch_dir dir;
    const auto out = dir.file("out.json"), err = dir.file("err.txt");
    const std::string script =
        std::string(BITNET_TEST_DATA_DIR) + "/../model/render_chat_template.py";
    const std::string cmd =
        "/usr/bin/python3 '" + script + "' '" + cases_path + "' >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    INFO("python3 said: " << read_text(err));
    REQUIRE_MESSAGE(code != 3, "python3-jinja2 is missing: run deploy/install-deps.sh");
    REQUIRE(code == 0);
    auto parsed = jj::parse_json(read_text(out), jj::limits{}, false);
    REQUIRE(parsed);
    return *parsed;
}

} // namespace

TEST_CASE("chat templates render byte for byte as Jinja2 renders them for Transformers") {
    const auto cases_path = test::data_path("chat_templates/cases.json");
    auto spec = jj::parse_json(read_text(cases_path), jj::limits{}, false);
    REQUIRE(spec);
    const auto reference = reference_renderings(cases_path);
    const auto now = static_cast<std::time_t>(field(*spec, "now").as_int());
    std::size_t compared = 0, failures_agreed = 0;
    for (const auto& [file, tokens] : field(*spec, "templates").obj->items) {
        const auto source = read_text(test::data_path("chat_templates/" + file));
        auto fmt = chat_formatter::jinja(source, field(tokens, "bos_token").str.s,
                                         field(tokens, "eos_token").str.s);
        REQUIRE_MESSAGE(fmt, file << ": " << fmt.error().message);
        for (const auto& c : *field(*spec, "cases").arr) {
            std::vector<std::string> store;
            const auto turns = turns_of(field(c, "messages"), store);
            const auto& tools = field(c, "tools");
            const auto& kwargs = field(c, "kwargs");
            const std::string tools_json = tools.is_none() ? "" : compact_json(tools);
            const std::string kwargs_json = kwargs.is_none() ? "" : compact_json(kwargs);
            for (bool agp : {true, false}) {
                const auto key = file + "|" + field(c, "name").str.s + (agp ? "|true" : "|false");
                const auto* expected = reference.obj->find(key);
                REQUIRE_MESSAGE(expected, key);
                const auto got = fmt->render(turns, {agp, tools_json, kwargs_json, now});
                INFO(key);
                if (const auto* want = expected->obj->find("output")) {
                    REQUIRE_MESSAGE(got, got.error().message);
                    CHECK(got->text == want->str.s);
                    ++compared;
                } else {
                    CHECK_MESSAGE(!got, "Jinja2 failed (" << field(*expected, "error").str.s
                                                          << ") but we rendered " << got->text);
                    ++failures_agreed;
                }
            }
        }
    }
    // 7 templates x 15 message lists x 2: most render; Jinja2's own failures are few.
    CHECK(compared + failures_agreed == 210);
    CHECK(compared >= 190);
}
