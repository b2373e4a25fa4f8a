// The OpenAPI document built into the binary against the route table: the same operations, no
// more and no fewer, security that matches each route's role, and references that resolve. The
// live shapes are checked by the npm suite (tests/clients/openapi.test.mjs).
#include "http/routes/openapi.hpp"
#include "http/routes/routes.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace bitnet::http;
namespace json = boost::json;

namespace {

json::value document() {
    boost::system::error_code ec;
    auto doc = json::parse(openapi_document(), ec);
    REQUIRE_MESSAGE(!ec, "http/openapi.json is not JSON: " << ec.message());
    return doc;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

/// Follows a local JSON pointer ("#/components/schemas/x"); null when it leads nowhere.
const json::value* follow(const json::value& doc, std::string_view ref) {
    if (ref.substr(0, 2) != "#/")
        return nullptr;
    boost::system::error_code ec;
    const auto* v = doc.find_pointer(ref.substr(1), ec);
    return ec ? nullptr : v;
}

} // namespace

TEST_CASE("the OpenAPI document lists exactly the routes of the table, test hooks aside") {
    const auto doc = document();
    REQUIRE(doc.is_object());
    CHECK(std::string(doc.at("openapi").as_string()).rfind("3.1", 0) == 0);
    std::set<std::pair<std::string, std::string>> documented;
    for (const auto& [path, item] : doc.at("paths").as_object())
        for (const auto& [method, op] : item.as_object())
            if (method == "get" || method == "post" || method == "delete" || method == "put" ||
                method == "patch" || method == "options")
                documented.emplace(lower(method), std::string(path));
    std::set<std::pair<std::string, std::string>> served;
    for (const auto& r : routes())
        if (!r.test_hook)
            served.emplace(lower(r.method), std::string(r.pattern));
    for (const auto& op : served) {
        CAPTURE(op.first);
        CAPTURE(op.second);
        CHECK(documented.count(op) == 1);
    }
    for (const auto& op : documented) {
        CAPTURE(op.first);
        CAPTURE(op.second);
        CHECK(served.count(op) == 1);
    }
}

TEST_CASE("each documented operation states the credential its route's role asks for") {
    const auto doc = document();
    for (const auto& r : routes()) {
        if (r.test_hook)
            continue;
        CAPTURE(r.pattern);
        const auto& op = doc.at("paths").at(std::string(r.pattern)).at(lower(r.method)).as_object();
        REQUIRE(op.contains("responses"));
        CHECK(op.contains("operationId"));
        // Open routes say so with an empty security list; the others name a scheme, and
        // admin routes the admin one.
        REQUIRE(op.contains("security"));
        const auto& security = op.at("security").as_array();
        if (r.need == role::open) {
            CHECK(security.empty());
            continue;
        }
        REQUIRE_FALSE(security.empty());
        const auto text = json::serialize(security);
        if (r.need == role::admin)
            CHECK(text.find("admin") != std::string::npos);
        // A route that needs a key answers 401 without one.
        CHECK(op.at("responses").as_object().contains("401"));
    }
}

TEST_CASE("every $ref of the OpenAPI document resolves inside it") {
    const auto doc = document();
    // An explicit stack: the document is ours, but a walk should not trust its depth.
    std::vector<const json::value*> todo{&doc};
    std::size_t refs = 0;
    while (!todo.empty()) {
        const auto* v = todo.back();
        todo.pop_back();
        if (v->is_array()) {
            for (const auto& e : v->as_array())
                todo.push_back(&e);
        } else if (v->is_object()) {
            for (const auto& [k, e] : v->as_object()) {
                if (k == "$ref" && e.is_string()) {
                    ++refs;
                    CAPTURE(e.as_string());
                    CHECK(follow(doc, e.as_string()) != nullptr);
                }
                todo.push_back(&e);
            }
        }
    }
    CHECK(refs > 0);
}
