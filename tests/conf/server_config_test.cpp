// The configuration loader: documented defaults, layer precedence, validation messages.
#include "conf/server_config.hpp"

#include "conf/fake_env.hpp"
#include "support/test_data.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <map>

namespace {

using bitnet::conf::config_sources;
using bitnet::conf::load_config;
using bitnet::conf::server_config;

using bitnet::test::fake_env;

std::string write_json(const bitnet::test::scratch_dir& dir, const std::string& text) {
    auto path = dir.file("server.json");
    bitnet::test::write_file(path, {text.begin(), text.end()});
    return path;
}

std::string error_of(const config_sources& src) {
    auto r = load_config(src);
    REQUIRE_FALSE(r.has_value());
    return r.error().message;
}

} // namespace

TEST_CASE("the shipped config file holds exactly the struct's defaults") {
    auto r = load_config({.file = bitnet::test::data_path("../../conf/bitnet-server.json")});
    REQUIRE(r.has_value());
    const server_config d;
    CHECK(r->port == d.port);
    CHECK(r->listen_address == d.listen_address);
    CHECK(r->kv_budget_bytes == d.kv_budget_bytes);
    CHECK(r->max_batch_tokens == d.max_batch_tokens);
    CHECK(r->decoding_batch_tokens == d.decoding_batch_tokens);
    CHECK(r->max_batch_seqs == d.max_batch_seqs);
    CHECK(r->max_waiting_requests == d.max_waiting_requests);
    CHECK(r->max_waiting_prompt_tokens == d.max_waiting_prompt_tokens);
    CHECK(r->priority_weight_high == d.priority_weight_high);
    CHECK(r->default_timeout_ms == d.default_timeout_ms);
    CHECK(r->max_body_bytes == d.max_body_bytes);
    CHECK(r->sse_buffer_bytes == d.sse_buffer_bytes);
    CHECK(r->drain_timeout_ms == d.drain_timeout_ms);
    CHECK(r->log_level == d.log_level);
    CHECK(r->models.empty());
    CHECK(r->node_name == d.node_name);
    CHECK(r->cluster_listen == d.cluster_listen);
    CHECK(r->cluster_join == d.cluster_join);
    CHECK(r->cluster_cert == d.cluster_cert);
    CHECK(r->cluster_key == d.cluster_key);
    CHECK(r->cluster_ca == d.cluster_ca);
    CHECK(r->cluster_insecure == d.cluster_insecure);
    CHECK(r->cluster_failure_timeout_ms == d.cluster_failure_timeout_ms);
    CHECK(r->cluster_heartbeat_ms == d.cluster_heartbeat_ms);
    // Every key the loader knows is in the file (to_json prints every key), except the test
    // builds' keys (test_*, conf/README.md "Test builds"), which a release build does not list.
    boost::json::object printed = boost::json::parse(bitnet::conf::to_json(d)).as_object();
    const auto file =
        bitnet::test::read_file(bitnet::test::data_path("../../conf/bitnet-server.json"));
    boost::json::object shipped =
        boost::json::parse(std::string(file.begin(), file.end())).as_object();
    for (const auto& [key, value] : printed) {
        INFO("key " << key);
        if (key.starts_with("test_")) {
            CHECK_FALSE(shipped.contains(key));
            continue;
        }
        REQUIRE(shipped.contains(key));
        CHECK(shipped.at(key) == value);
    }
}

TEST_CASE("precedence: file < environment < flags, key by key") {
    bitnet::test::scratch_dir dir;
    auto file = write_json(dir, R"({"port": 9000, "io_threads": 3, "max_batch_tokens": 256,
        "models": [{"alias": "a", "path": "a.gguf"}, {"alias": "b", "path": "b.gguf"}],
        "default_model": "b", "api_keys": ["key-one-1234"]})");
    auto r = load_config({.file = file,
                          .env = fake_env({{"BITNET_PORT", "9001"},
                                           {"BITNET_MAX_BATCH_TOKENS", "128"},
                                           {"BITNET_API_KEYS", "key-two-1234,key-three-12"}}),
                          .args = {"--port", "9002", "--log-level=debug"}});
    REQUIRE(r.has_value());
    CHECK(r->port == 9002);            // flag beats env beats file
    CHECK(r->max_batch_tokens == 128); // env beats file
    CHECK(r->io_threads == 3);         // file beats default
    CHECK(r->caf_threads == server_config{}.caf_threads);
    CHECK(r->log_level == "debug");
    CHECK(r->api_keys == std::vector<std::string>{"key-two-1234", "key-three-12"});
    REQUIRE(r->default_entry() != nullptr);
    CHECK(r->default_entry()->path == "b.gguf");
}

TEST_CASE("a models entry may name its own draft model, or none, over the server-wide one") {
    bitnet::test::scratch_dir dir;
    auto file = write_json(dir, R"({"draft_model": "/m/wide.gguf", "models": [
        {"alias": "own", "path": "/m/a.gguf", "draft_model": "/m/own-draft.gguf"},
        {"alias": "none", "path": "/m/b.gguf", "draft_model": ""},
        {"alias": "wide", "path": "/m/c.gguf"}]})");
    auto r = load_config({.file = file});
    REQUIRE(r.has_value());
    REQUIRE(r->models.size() == 3);
    CHECK(r->models[0].draft_or(r->draft_model) == "/m/own-draft.gguf");
    CHECK(r->models[1].draft_or(r->draft_model).empty());
    CHECK(r->models[2].draft_or(r->draft_model) == "/m/wide.gguf");
    // The effective configuration prints them, and loads back to the same entries.
    const auto text = bitnet::conf::to_json(*r);
    CHECK(text.find(R"("draft_model":"/m/own-draft.gguf")") != std::string::npos);
    auto back = load_config({.file = write_json(dir, text)});
    REQUIRE(back.has_value());
    CHECK(back->models == r->models);
    // A draft that is not a string, or an entry key nobody reads, is refused by name.
    const auto wrong =
        error_of({.file = write_json(
                      dir, R"({"models": [{"alias": "a", "path": "a.gguf", "draft_model": 3}]})")});
    CHECK(wrong.find("draft_model") != std::string::npos);
    const auto typo = error_of(
        {.file = write_json(
             dir, R"({"models": [{"alias": "a", "path": "a.gguf", "draft": "d.gguf"}]})")});
    CHECK_MESSAGE(typo.find("\"draft\"") != std::string::npos, typo);
}

TEST_CASE("--model and BITNET_MODEL replace the model list and set the default") {
    bitnet::test::scratch_dir dir;
    auto file = write_json(dir, R"({"models": [{"alias": "a", "path": "a.gguf"}],
        "default_model": "a"})");
    auto from_env =
        load_config({.file = file, .env = fake_env({{"BITNET_MODEL", "/m/tiny.gguf"}})});
    REQUIRE(from_env.has_value());
    REQUIRE(from_env->models.size() == 1);
    CHECK(from_env->models[0].alias == "tiny");
    CHECK(from_env->default_entry()->path == "/m/tiny.gguf");

    auto from_flag = load_config({.file = file,
                                  .env = fake_env({{"BITNET_MODEL", "/m/tiny.gguf"}}),
                                  .args = {"--model", "x=/m/other.gguf"}});
    REQUIRE(from_flag.has_value());
    CHECK(from_flag->default_entry()->alias == "x");
    CHECK(from_flag->default_entry()->path == "/m/other.gguf");
}

TEST_CASE("--config on the command line names the file layer") {
    bitnet::test::scratch_dir dir;
    auto file = write_json(dir, R"({"port": 7123})");
    auto r = load_config({.args = {"--config", file}});
    REQUIRE(r.has_value());
    CHECK(r->port == 7123);
}

TEST_CASE("every validation error names the key and where the value came from") {
    bitnet::test::scratch_dir dir;
    auto msg = error_of({.env = fake_env({{"BITNET_PORT", "70000"}})});
    CHECK(msg.find("'port'") != std::string::npos);
    CHECK(msg.find("BITNET_PORT") != std::string::npos);
    CHECK(msg.find("0..65535") != std::string::npos);

    msg = error_of({.args = {"--max-batch-tokens", "12x"}});
    CHECK(msg.find("'max_batch_tokens'") != std::string::npos);
    CHECK(msg.find("--max-batch-tokens") != std::string::npos);

    msg = error_of({.file = write_json(dir, R"({"port": "8080"})")});
    CHECK(msg.find("'port'") != std::string::npos);
    CHECK(msg.find("integer") != std::string::npos);

    msg = error_of({.file = write_json(dir, R"({"prot": 8080})")});
    CHECK(msg.find("unknown config key 'prot'") != std::string::npos);

    msg = error_of({.file = write_json(dir, R"({"port": 80,)")});
    CHECK(msg.find("not valid JSON") != std::string::npos);

    msg = error_of({.args = {"--no-such-flag", "1"}});
    CHECK(msg.find("--no-such-flag") != std::string::npos);

    msg = error_of({.args = {"--port"}});
    CHECK(msg.find("needs a value") != std::string::npos);

    msg = error_of({.file = dir.file("missing.json")});
    CHECK(msg.find("missing.json") != std::string::npos);
}

TEST_CASE("decoding_batch_tokens: file, environment and flag, at least 2 tokens") {
    bitnet::test::scratch_dir dir;
    auto file = write_json(dir, R"({"decoding_batch_tokens": 64})");
    auto r = load_config({.file = file});
    REQUIRE(r.has_value());
    CHECK(r->decoding_batch_tokens == 64);
    r = load_config({.file = file, .env = fake_env({{"BITNET_DECODING_BATCH_TOKENS", "96"}})});
    REQUIRE(r.has_value());
    CHECK(r->decoding_batch_tokens == 96);
    r = load_config({.file = file,
                     .env = fake_env({{"BITNET_DECODING_BATCH_TOKENS", "96"}}),
                     .args = {"--decoding-batch-tokens", "200"}});
    REQUIRE(r.has_value());
    CHECK(r->decoding_batch_tokens == 200);
    CHECK(bitnet::conf::to_json(*r).find("\"decoding_batch_tokens\":200") != std::string::npos);
    // One token could hold no prefill chunk (prompt tokens go two or more at a time).
    auto msg = error_of({.args = {"--decoding-batch-tokens", "1"}});
    CHECK(msg.find("'decoding_batch_tokens'") != std::string::npos);
    CHECK(msg.find("2..") != std::string::npos);
}

TEST_CASE("cross-key validation") {
    CHECK(error_of({.args = {"--max-batch-tokens", "8", "--max-batch-seqs", "16"}})
              .find("'max_batch_seqs'") != std::string::npos);
    CHECK(error_of({.args = {"--models", "a=x.gguf,b=y.gguf", "--default-model", "c"}})
              .find("'default_model'") != std::string::npos);
    CHECK(error_of({.args = {"--models", "a=x.gguf,a=y.gguf"}}).find("appears twice") !=
          std::string::npos);
    CHECK(error_of({.args = {"--log-level", "loud"}}).find("'log_level'") != std::string::npos);
    CHECK(error_of({.args = {"--api-keys", "short"}}).find("'api_keys'") != std::string::npos);
    CHECK(error_of({.args = {"--kv-block-tokens", "0"}}).find("'kv_block_tokens'") !=
          std::string::npos);
    // The greedy screen bounds the F16 logits; Q8_0 logits leave none to screen.
    CHECK(
        error_of({.args = {"--greedy-screen", "1", "--q8-logits", "1"}}).find("'greedy_screen'") !=
        std::string::npos);
    CHECK(load_config({.args = {"--greedy-screen", "1"}}).has_value());
}

TEST_CASE("usage lists every flag with its environment name") {
    auto u = bitnet::conf::usage();
    CHECK(u.find("--max-waiting-prompt-tokens") != std::string::npos);
    CHECK(u.find("BITNET_SSE_PING_MS") != std::string::npos);
}

TEST_CASE("the command-line contract's short flags and --alias") {
    auto r = load_config(
        {.args = {"--model", "/m/tiny.gguf", "--alias", "chat", "--host", "0.0.0.0", "--threads",
                  "3", "--max-seqs", "5", "--max-waiting", "7", "--api-key", "inference-key-1",
                  "--admin-key", "admin-key-0001", "--print-config"}});
    REQUIRE(r.has_value());
    REQUIRE(r->models.size() == 1);
    CHECK(r->models[0].alias == "chat");
    CHECK(r->models[0].path == "/m/tiny.gguf");
    CHECK(r->default_entry()->alias == "chat");
    CHECK(r->listen_address == "0.0.0.0");
    CHECK(r->n_threads == 3);
    CHECK(r->max_batch_seqs == 5);
    CHECK(r->max_waiting_requests == 7);
    CHECK(r->api_keys == std::vector<std::string>{"inference-key-1"});
    CHECK(r->admin_api_keys == std::vector<std::string>{"admin-key-0001"});

    CHECK(error_of({.args = {"--alias", "x"}}).find("exactly one model") != std::string::npos);
    CHECK(error_of({.args = {"--threads", "many"}}).find("--n-threads") != std::string::npos);
}

TEST_CASE("to_json prints the effective configuration in the file's keys, keys redacted") {
    auto r = load_config(
        {.args = {"--model", "a=/m/a.gguf", "--port", "9100", "--api-keys", "secret-key-1234"}});
    REQUIRE(r.has_value());
    const auto text = bitnet::conf::to_json(*r);
    CHECK(text.find(R"("port":9100)") != std::string::npos);
    CHECK(text.find(R"("models":[{"alias":"a","path":"/m/a.gguf"}])") != std::string::npos);
    CHECK(text.find("secret-key-1234") == std::string::npos);
    CHECK(text.find("<redacted>") != std::string::npos);
    // Without keys, what it prints loads back as a config file to the same values.
    r->api_keys.clear();
    bitnet::test::scratch_dir dir;
    auto back = load_config({.file = write_json(dir, bitnet::conf::to_json(*r))});
    REQUIRE(back.has_value());
    CHECK(back->port == 9100);
    CHECK(back->models == r->models);
    CHECK(bitnet::conf::to_json(*back) == bitnet::conf::to_json(*r));
}

TEST_CASE("cors_allowed_origins: origins or *, each checked, from flag, environment or file") {
    auto r = load_config({.args = {"--cors-allowed-origins", "https://app.example,http://h:5173"}});
    REQUIRE(r.has_value());
    CHECK(r->cors_allowed_origins ==
          std::vector<std::string>{"https://app.example", "http://h:5173"});
    r = load_config({.env = fake_env({{"BITNET_CORS_ALLOWED_ORIGINS", "*"}})});
    REQUIRE(r.has_value());
    CHECK(r->cors_allowed_origins == std::vector<std::string>{"*"});
    CHECK(load_config({}).value().cors_allowed_origins.empty());
    for (const char* bad : {"app.example", "https://app.example/", "https://a.example/path",
                            "ftp://a.example", "https://"}) {
        INFO(bad);
        const auto msg = error_of({.args = {"--cors-allowed-origins", bad}});
        CHECK(msg.find("'cors_allowed_origins'") != std::string::npos);
        CHECK(msg.find("is not an origin") != std::string::npos);
    }
}
