// A model whose last version failed (its load, or its restarts) is listed but serves nothing:
// requests for it are told that, with why for the operator, on every route family; a version that
// works serves it again, and an unload makes it unknown. One whose new version is loading while
// nothing serves it tells clients to come back. Waits are bounded polls for a state.
#include "server/model_admin.hpp"

#include <csignal>

using namespace bitnet;
using test::load_and_wait;

namespace {

using verb = boost::beast::http::verb;

std::string completion(const std::string& alias) {
    return R"({"model":")" + alias + R"(","prompt":"Hello","max_tokens":2,"temperature":0})";
}

/// The error object of a refused request, after checking its status.
boost::json::object refused(const test::http_reply& r, unsigned status) {
    CHECK_MESSAGE(r.status == status, r.body);
    return test::parse_object(r.body).at("error").as_object();
}

} // namespace

TEST_CASE("a model whose load failed answers 503 model_unavailable with why, not 404") {
    test::scratch_dir dir;
    test::server_process s;
    const auto missing = dir.file("missing.gguf");
    REQUIRE(load_and_wait(s, "ghost", missing).at("state").as_string() == "failed");

    // Text (OpenAI Completions), token ids (native) and the tokenizer route: each told why.
    for (const auto& [route, body] : std::vector<std::pair<std::string, std::string>>{
             {"/v1/completions", completion("ghost")},
             {"/v1/inference", R"({"model":"ghost","prompt":[1,2,3],"max_tokens":2})"},
             {"/v1/tokenize", R"({"model":"ghost","text":"Hello"})"}}) {
        CAPTURE(route);
        const auto e = refused(s.post(route, body), 503);
        CHECK(e.at("code").as_string() == "model_unavailable");
        CHECK(e.at("param").as_string() == "model");
        const std::string message(e.at("message").as_string());
        CHECK(message.find("model 'ghost' failed and serves nothing") != std::string::npos);
        // An open server shows the operator's detail: the load's own failure.
        CHECK(message.find("missing.gguf") != std::string::npos);
    }
    // Anthropic's shape of the same 503.
    auto m = s.post("/v1/messages", R"({"model":"ghost","max_tokens":2,"messages":[{"role":"user",)"
                                    R"("content":"Hi"}]})");
    CHECK_MESSAGE(m.status == 503, m.body);
    CHECK(test::parse_object(m.body).at("error").at("type").as_string() == "overloaded_error");
    // An unknown alias is still a 404.
    CHECK(refused(s.post("/v1/completions", completion("nobody")), 404).at("code").as_string() ==
          "model_not_found");
    // The model that serves is untouched.
    CHECK(s.post("/v1/completions", completion("tiny")).status == 200);

    // A version that works serves the alias again.
    REQUIRE(load_and_wait(s, "ghost", s.model_path()).at("state").as_string() == "ready");
    auto ok = s.post("/v1/completions", completion("ghost"));
    CHECK_MESSAGE(ok.status == 200, ok.body);

    // An alias that only failed, unloaded: unknown from then on.
    REQUIRE(load_and_wait(s, "junk", missing).at("state").as_string() == "failed");
    CHECK(refused(s.post("/v1/completions", completion("junk")), 503).at("code").as_string() ==
          "model_unavailable");
    REQUIRE(s.del("/v1/models/junk").status == 202);
    CHECK(refused(s.post("/v1/completions", completion("junk")), 404).at("code").as_string() ==
          "model_not_found");
    CHECK(s.alive());
}

TEST_CASE("a failed model's reason is the admin key's: a user key reads that it failed, not why") {
    const std::string user = "user-key-0001";
    const std::string admin = "admin-key-0001";
    test::launch_options lo;
    lo.admin_open = false;
    test::scratch_dir dir;
    test::server_process s({"--api-keys", user, "--admin-key", admin}, lo);
    const auto missing = dir.file("missing.gguf");
    auto load = test::http_request(s.port(), verb::post, "/v1/models/load",
                                   test::load_body("ghost", missing), admin);
    REQUIRE_MESSAGE(load.status == 202, load.body);
    std::string state;
    for (int i = 0; i < 3000 && state != "failed"; ++i) {
        auto r = test::http_request(s.port(), verb::get, "/v1/models/ghost", {}, admin);
        if (r.status == 200)
            state = test::parse_object(r.body).at("state").as_string();
        if (state != "failed")
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(state == "failed");

    auto ask = [&](const std::string& key) {
        auto e = refused(
            test::http_request(s.port(), verb::post, "/v1/completions", completion("ghost"), key),
            503);
        CHECK(e.at("code").as_string() == "model_unavailable");
        return std::string(e.at("message").as_string());
    };
    const auto as_user = ask(user);
    CHECK(as_user.find("model 'ghost' failed and serves nothing") != std::string::npos);
    CHECK(as_user.find("the admin key sees why") != std::string::npos);
    CHECK(as_user.find(missing) == std::string::npos);
    CHECK(as_user.find("missing.gguf") == std::string::npos);
    CHECK(ask(admin).find("missing.gguf") != std::string::npos);
    // The tokenizer route hides it the same way.
    auto t = test::http_request(s.port(), verb::post, "/v1/tokenize",
                                R"({"model":"ghost","text":"Hello"})", user);
    const auto te = refused(t, 503);
    CHECK(std::string(te.at("message").as_string()).find("missing.gguf") == std::string::npos);
}

TEST_CASE("a model whose version is loading answers 503 model_loading with a Retry-After") {
    test::scratch_dir dir;
    // Shut down while a load still hashes: the drain timeout bounds the exit.
    test::server_process s({"--drain-timeout-ms", "1000"});
    const auto huge = test::endless_load_file(dir, s);
    auto loading = [&](const std::string& alias) {
        auto r = s.post("/v1/models/load", test::load_body(alias, huge));
        REQUIRE_MESSAGE(r.status == 202, r.body);
        REQUIRE(test::model(s, alias).at("state").as_string() == "loading");
    };

    // A first version loading: come back later, on every route family (not 404, no model).
    loading("late");
    for (const auto& [route, body] : std::vector<std::pair<std::string, std::string>>{
             {"/v1/completions", completion("late")},
             {"/v1/inference", R"({"model":"late","prompt":[1,2,3],"max_tokens":2})"},
             {"/v1/tokenize", R"({"model":"late","text":"Hello"})"}}) {
        CAPTURE(route);
        const auto r = s.post(route, body);
        const auto e = refused(r, 503);
        CHECK(e.at("code").as_string() == "model_loading");
        CHECK(e.at("param").as_string() == "model");
        CHECK(e.at("message").as_string() == "model 'late' is loading; retry in a moment");
        CHECK(r.retry_after == "2");
    }
    auto m = s.post("/v1/messages", R"({"model":"late","max_tokens":2,"messages":[{"role":"user",)"
                                    R"("content":"Hi"}]})");
    CHECK_MESSAGE(m.status == 503, m.body);
    CHECK(test::parse_object(m.body).at("error").at("type").as_string() == "overloaded_error");
    CHECK(m.retry_after == "2");

    // A model whose last version failed, loading again: "loading", no longer the old failure.
    REQUIRE(load_and_wait(s, "ghost", dir.file("missing.gguf")).at("state").as_string() ==
            "failed");
    CHECK(refused(s.post("/v1/completions", completion("ghost")), 503).at("code").as_string() ==
          "model_unavailable");
    loading("ghost");
    const auto again = s.post("/v1/completions", completion("ghost"));
    CHECK(refused(again, 503).at("code").as_string() == "model_loading");
    CHECK(again.retry_after == "2");
    CHECK(again.body.find("missing.gguf") == std::string::npos);
    // The model that serves is untouched.
    CHECK(s.post("/v1/completions", completion("tiny")).status == 200);
    CHECK(s.signal_and_wait(SIGTERM) == 0);
}
