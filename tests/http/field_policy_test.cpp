// The request-field policy (http/field_policy.hpp): README.md's "Request fields" table is the
// code's table, row for row and cell for cell; and each kind of cell does what the README says
// (served and ignored fields pass, refused ones and unknown ones are a 400 naming the field, a
// "400 unless V" cell lets exactly V through, null is absent), on every route's parser.
#include "http/field_policy.hpp"

#include "http/anthropic/api_anthropic.hpp"
#include "http/api_json.hpp"
#include "http/responses/api_responses.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::http;
namespace json = boost::json;

namespace {

std::string readme() {
    std::ifstream f(std::string(BITNET_TEST_DATA_DIR) + "/../../README.md");
    REQUIRE(f);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string trim(std::string s) {
    while (!s.empty() && s.front() == ' ')
        s.erase(s.begin());
    while (!s.empty() && s.back() == ' ')
        s.pop_back();
    return s;
}

/// A markdown table row's cells, without the outer pipes and the backticks.
std::vector<std::string> cells_of(const std::string& row) {
    std::vector<std::string> out;
    std::string cell;
    for (std::size_t i = 1; i < row.size(); ++i) {
        if (row[i] == '|') {
            out.push_back(trim(cell));
            cell.clear();
        } else if (row[i] != '`') {
            cell += row[i];
        }
    }
    return out;
}

std::optional<api_error> check(api_family f, std::string_view body) {
    return check_request_fields(f, json::parse(body).as_object());
}

} // namespace

TEST_CASE("README's Request fields table is the server's table, cell for cell") {
    const auto text = readme();
    const auto at = text.find("\n### Request fields\n");
    REQUIRE(at != std::string::npos);
    const auto head = text.find("\n| field |", at);
    REQUIRE(head != std::string::npos);
    std::istringstream lines(text.substr(head + 1));
    std::string line;
    std::getline(lines, line); // the header
    CHECK(cells_of(line) == std::vector<std::string>{"field", "native", "completions", "chat",
                                                     "Responses", "Messages", "here"});
    std::getline(lines, line); // the rule
    std::size_t i = 0;
    const auto rules = field_rules();
    while (std::getline(lines, line) && line.rfind("| ", 0) == 0) {
        const auto cells = cells_of(line);
        REQUIRE(cells.size() == 7);
        REQUIRE_MESSAGE(i < rules.size(), "README lists more fields than the server: " << line);
        const auto& r = rules[i++];
        CAPTURE(r.name);
        CHECK(cells[0] == r.name);
        for (std::size_t k = 0; k < n_api_families; ++k)
            CHECK(cells[k + 1] == r.cells[k]);
        CHECK(cells[6] == r.note);
    }
    CHECK(i == rules.size());
    for (std::size_t k = 1; k < rules.size(); ++k)
        CHECK(rules[k - 1].name < rules[k].name); // sorted: looked up by bisection
}

TEST_CASE("a served or ignored field passes, a refused or unknown one is a 400 naming it") {
    CHECK_FALSE(check(api_family::chat, R"({"messages":[],"user":"u","metadata":{"a":"b"},
        "presence_penalty":1,"service_tier":"flex"})"));
    auto e = check(api_family::chat, R"({"messages":[],"functions":[{"name":"f"}]})");
    REQUIRE(e);
    CHECK(e->status == 400);
    CHECK(e->param == "functions");
    CHECK(e->code == "unsupported_parameter");
    CHECK(e->message.find("tools") != std::string::npos); // the note says what to use instead

    e = check(api_family::chat, R"({"messages":[],"mirostat_tau":5})");
    REQUIRE(e);
    CHECK(e->param == "mirostat_tau");
    CHECK(e->code == "unknown_parameter");
    // A field of another family is unknown here.
    CHECK(check(api_family::messages, R"({"presence_penalty":0.5})")->param == "presence_penalty");
    CHECK(check(api_family::native, R"({"response_format":{"type":"json_object"}})")->param ==
          "response_format");
    // null is absent.
    CHECK_FALSE(check(api_family::chat, R"({"functions":null,"mirostat_tau":null})"));
}

TEST_CASE("a '400 unless V' field passes with exactly V") {
    CHECK_FALSE(check(api_family::completions, R"({"best_of":1})"));
    CHECK_FALSE(check(api_family::completions, R"({"best_of":1.0})")); // numbers by value
    CHECK(check(api_family::completions, R"({"best_of":2})")->param == "best_of");
    CHECK_FALSE(check(api_family::messages, R"({"thinking":{"type":"disabled"}})"));
    auto e = check(api_family::messages, R"({"thinking":{"type":"enabled","budget_tokens":1024}})");
    REQUIRE(e);
    CHECK(e->param == "thinking");
    CHECK(e->message.find("does not think") != std::string::npos);
    CHECK(check(api_family::messages, R"({"thinking":{"type":"disabled","x":1}})"));
    CHECK_FALSE(check(api_family::chat, R"({"modalities":["text"]})"));
    CHECK(check(api_family::chat, R"({"modalities":["text","audio"]})"));
    CHECK_FALSE(check(api_family::responses, R"({"include":[],"truncation":"disabled"})"));
    CHECK(check(api_family::responses, R"({"truncation":"auto"})")->param == "truncation");
    CHECK(check(api_family::responses, R"({"conversation":"conv_1"})")->param == "conversation");
    CHECK_FALSE(
        check(api_family::native, R"({"use_beam_search":false,"skip_special_tokens":true})"));
    CHECK(check(api_family::native, R"({"use_beam_search":true})"));
}

TEST_CASE("every route's parser applies its family's column") {
    auto refused = [](const auto& r) {
        const auto* e = std::get_if<api_error>(&r);
        return e ? e->param : std::string();
    };
    CHECK(refused(parse_inference(R"({"prompt":"x","suffix":"y"})", api_family::completions)) ==
          "suffix");
    CHECK(refused(parse_inference(R"({"prompt":"x","suffix":"y"})", api_family::native)) ==
          "suffix");
    CHECK(refused(parse_inference(R"({"messages":[{"role":"user","content":"x"}],
        "reasoning_effort":"low"})",
                                  api_family::chat)) == "reasoning_effort");
    CHECK(refused(parse_messages(R"({"max_tokens":4,"messages":[{"role":"user","content":"x"}],
        "thinking":{"type":"enabled","budget_tokens":2048}})")) == "thinking");
    CHECK(refused(parse_messages(R"({"max_tokens":4,"messages":[{"role":"user","content":"x"}],
        "container":"c"})")) == "container");
    CHECK(refused(parse_responses(R"({"input":"x","conversation":{"id":"conv_1"}})")) ==
          "conversation");
    CHECK(refused(parse_responses(R"({"input":"x","logit_bias":{"1":5}})")) == "logit_bias");
    // What SDKs send by default passes: the Agents SDK's include [], LangChain's thinking off.
    CHECK(refused(parse_responses(R"({"input":"x","include":[],"tools":[]})")).empty());
    CHECK(refused(parse_messages(R"({"max_tokens":4,"messages":[{"role":"user","content":"x"}],
        "thinking":{"type":"disabled"},"top_k":-1,"top_p":-1,"temperature":1})"))
              .empty());
}
