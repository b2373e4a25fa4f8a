// The family interface from outside http/: a family in the test tree (echo_family/) registered
// with one line answers its own route through the real server, plain and as an NDJSON stream,
// and gets the same tokens the native route does.
#include "echo_family/echo_turn.hpp"
#include "live_server.hpp"

#include <sstream>

using namespace live_rig;

TEST_CASE("a family written in the test tree plugs in with one registry line, plain and NDJSON") {
    http::add_family("/v1/echo", echo_family::start); // the one registry line
    live_server s;

    const auto native = s.post("/v1/inference", R"({"prompt":[1,2,3],"max_tokens":4})");
    REQUIRE(native.status == 200);
    const auto want = boost::json::parse(native.body).as_object().at("text").as_string();

    const auto plain = s.post("/v1/echo", R"({"ids":[1,2,3],"max":4})");
    REQUIRE(plain.status == 200);
    const auto p = boost::json::parse(plain.body).as_object();
    CHECK(p.at("said").as_string() == want);
    CHECK(p.at("tokens").as_int64() == 4);
    CHECK(p.at("finish").as_string() == "length");

    const auto streamed = s.post("/v1/echo", R"({"ids":[1,2,3],"max":4,"stream":true})");
    REQUIRE(streamed.status == 200);
    CHECK(streamed.content_type == "application/x-ndjson");
    std::istringstream lines(streamed.body);
    std::string line;
    std::vector<boost::json::object> frames;
    while (std::getline(lines, line)) {
        REQUIRE_FALSE(line.empty()); // one JSON value per line, nothing between
        frames.push_back(boost::json::parse(line).as_object());
    }
    REQUIRE(frames.size() >= 3);
    CHECK(frames.front().contains("id"));
    std::string pieces;
    for (std::size_t i = 1; i + 1 < frames.size(); ++i)
        pieces += frames[i].at("piece").as_string();
    CHECK(pieces == want);
    CHECK(frames.back().at("done").as_bool());
    CHECK(frames.back().at("said").as_string() == want);
    CHECK(frames.back().at("finish").as_string() == "length");

    // Its errors are the server's structured errors, naming its own field.
    const auto bad = s.post("/v1/echo", R"({"ids":"nope"})");
    CHECK(bad.status == 400);
    CHECK(error_of(bad).at("param").as_string() == "ids");
    // A path no family registered is still a 404.
    CHECK(s.post("/v1/echo2", R"({"ids":[1]})").status == 404);
}
