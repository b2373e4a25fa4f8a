// Memory bounded by bytes and freed with its owner, on the real binary: a model version that
// unloads leaves no per-version object behind (the live counts /v1/stats shows return to their
// value before its load), and a schema bigger than the compiled-schema budget is a 400 naming
// the budget, before it is kept anywhere.
#include "server/model_admin.hpp"

#include <string>

using namespace bitnet;

namespace {

std::string schema_request(const std::string& model, const std::string& schema) {
    return R"({"model":")" + model +
           R"(","messages":[{"role":"user","content":"x"}],"max_tokens":8,"temperature":0,)"
           R"("response_format":{"type":"json_schema","json_schema":{"name":"s","schema":)" +
           schema + "}}}";
}

boost::json::object live_objects(const test::server_process& s) {
    return test::parse_object(s.get("/v1/stats").body).at("memory").at("live_objects").as_object();
}

} // namespace

TEST_CASE("a version that unloads leaves nothing behind: live per-version objects return") {
    test::server_process s;
    const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
    // The served model compiles the schema first: what the process keeps for that vocabulary is
    // there before the second version comes.
    REQUIRE(s.post("/v1/chat/completions", schema_request("tiny", schema)).status == 200);
    const auto before = live_objects(s);
    CHECK(before.at("versions").as_int64() >= 1);
    CHECK(before.at("executors").as_int64() >= 1);

    const auto op = test::load_and_wait(s, "second", s.model_path());
    REQUIRE(op.at("state").as_string() == "ready");
    REQUIRE(s.post("/v1/chat/completions", schema_request("second", schema)).status == 200);
    const auto loaded = live_objects(s);
    CHECK(loaded.at("versions").as_int64() > before.at("versions").as_int64());
    CHECK(loaded.at("executors").as_int64() > before.at("executors").as_int64());
    CHECK(loaded.at("text_sides").as_int64() > before.at("text_sides").as_int64());

    const auto gone = s.del("/v1/models/second");
    REQUIRE_MESSAGE(gone.status / 100 == 2, gone.body);
    boost::json::object now;
    CHECK(test::eventually([&] {
        now = live_objects(s);
        return now == before;
    }));
    INFO("before " << boost::json::serialize(before) << ", after " << boost::json::serialize(now));
    CHECK(now == before);
}

TEST_CASE("a schema bigger than the whole compiled-schema budget is a 400 naming the budget") {
    test::server_process s({"--schema-cache-bytes", "1048576"});
    // 30,000 distinct strings: a legal schema of about 330 KB whose grammar is past 1 MiB.
    std::string values;
    for (int i = 0; i < 30000; ++i)
        values += (i ? ",\"v" : "\"v") + std::to_string(100000 + i) + "\"";
    const auto r =
        s.post("/v1/chat/completions", schema_request("tiny", R"({"enum":[)" + values + "]}"));
    CHECK(r.status == 400);
    CHECK(r.body.find("schema_cache_bytes") != std::string::npos);
    // A small schema still compiles and is kept within the budget, as /v1/stats and /metrics say.
    CHECK(s.post("/v1/chat/completions", schema_request("tiny", R"({"type":"integer"})")).status ==
          200);
    const auto table =
        test::parse_object(s.get("/v1/stats").body).at("memory").at("tables").at("schema_cache");
    CHECK(table.at("budget_bytes").as_int64() == 1048576);
    CHECK(table.at("bytes").as_int64() > 0);
    CHECK(table.at("bytes").as_int64() <= 1048576);
    CHECK(s.get("/metrics").body.find(R"(bitnet_memory_table_bytes{table="schema_cache"})") !=
          std::string::npos);
}
