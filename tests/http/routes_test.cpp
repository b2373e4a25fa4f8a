// The route table as a pure function: every route found by its method and path, literal paths
// before {alias}, 405 versus 404, the role a caller needs before either, and labels that never
// carry client text.
#include "http/routes/routes.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace bitnet::http;

TEST_CASE("every route of the table is found by its own method and path") {
    for (const auto& r : routes()) {
        std::string path(r.pattern);
        const auto at = path.find('{');
        if (at != std::string::npos)
            path.replace(at, path.find('}') + 1 - at, "tiny");
        const auto m = match_route(r.method, path, true);
        CAPTURE(path);
        REQUIRE(m.found == &r);
        CHECK(m.need == r.need);
        CHECK(m.label == r.pattern);
        CHECK(m.alias == (at != std::string::npos ? "tiny" : ""));
    }
}

TEST_CASE("a stored response: GET and DELETE by id, its input items, one segment each") {
    auto get = match_route("GET", "/v1/responses/resp_ab_1", false);
    REQUIRE(get.found);
    CHECK(get.found->id == route_id::response_get);
    CHECK(get.alias == "resp_ab_1");
    CHECK(get.need == role::user);
    CHECK(get.label == "/v1/responses/{response_id}");
    auto del = match_route("DELETE", "/v1/responses/resp_ab_1", false);
    REQUIRE(del.found);
    CHECK(del.found->id == route_id::response_delete);
    auto items = match_route("GET", "/v1/responses/resp_ab_1/input_items", false);
    REQUIRE(items.found);
    CHECK(items.found->id == route_id::response_input_items);
    CHECK(items.alias == "resp_ab_1");
    // POST /v1/responses is still the create route; POST on an id is a 405.
    CHECK(match_route("POST", "/v1/responses", false).found->id == route_id::responses);
    auto post_id = match_route("POST", "/v1/responses/resp_1", false);
    CHECK(post_id.found == nullptr);
    CHECK(post_id.path_known);
    CHECK_FALSE(match_route("GET", "/v1/responses/a/b/input_items", false).path_known);
}

TEST_CASE("literal paths win over {alias}, one segment only, 405 names the path's route") {
    auto load = match_route("POST", "/v1/models/load", false);
    REQUIRE(load.found);
    CHECK(load.found->id == route_id::model_load);
    // GET /v1/models/load is not the model "load": the path is the load route's, GET is not
    // allowed there.
    auto get_load = match_route("GET", "/v1/models/load", false);
    CHECK(get_load.found == nullptr);
    CHECK(get_load.path_known);
    CHECK(get_load.need == role::admin);
    CHECK(get_load.label == "/v1/models/load");

    auto unload = match_route("DELETE", "/v1/models/tiny", false);
    REQUIRE(unload.found);
    CHECK(unload.found->id == route_id::model_unload);
    CHECK(unload.need == role::admin);
    auto post_model = match_route("POST", "/v1/models/tiny", false);
    CHECK(post_model.found == nullptr);
    CHECK(post_model.path_known);

    CHECK_FALSE(match_route("GET", "/v1/models/a/b", false).path_known);
    CHECK_FALSE(match_route("GET", "/v1/models/", false).path_known);
    CHECK_FALSE(match_route("POST", "/v1/models/a/b/rollback", false).path_known);
}

TEST_CASE("the crash hook exists only with test hooks on") {
    CHECK_FALSE(match_route("POST", "/v1/models/tiny/crash", false).path_known);
    auto on = match_route("POST", "/v1/models/tiny/crash", true);
    REQUIRE(on.found);
    CHECK(on.found->id == route_id::model_crash);
    CHECK(on.need == role::admin);
}

TEST_CASE("unknown paths: user role under /v1/, open elsewhere, the label is never client text") {
    auto v1 = match_route("GET", "/v1/secret-route", false);
    CHECK(v1.found == nullptr);
    CHECK_FALSE(v1.path_known);
    CHECK(v1.need == role::user);
    CHECK(v1.label == "unmatched");
    auto other = match_route("GET", "/etc/passwd", false);
    CHECK(other.need == role::open);
    CHECK(other.label == "unmatched");
    // Every label is a pattern of the table or "unmatched".
    std::set<std::string_view> allowed{"unmatched"};
    for (const auto& r : routes())
        allowed.insert(r.pattern);
    for (const char* t : {"/", "", "/health/live/x", "/v1/models/x%2fy", "/v1/models/{alias}",
                          "/metrics?x", "/V1/INFERENCE"})
        for (const char* method : {"GET", "POST", "DELETE", "PUT", "BREW"})
            CHECK(allowed.count(match_route(method, t, true).label) == 1);
}
